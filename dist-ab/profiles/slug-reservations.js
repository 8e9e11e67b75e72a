"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SlugReservations = exports.RESERVATION_GRACE_MS = void 0;
const errors_1 = require("../errors");
const event_store_port_1 = require("../event-store/event-store.port");
const record_writer_1 = require("../records/record-writer");
const profile_decider_1 = require("./profile.decider");
exports.RESERVATION_GRACE_MS = 60_000;
const MAX_ATTEMPTS = 10;
class SlugReservations {
    constructor(eventStore, profiles) {
        this.eventStore = eventStore;
        this.profiles = profiles;
    }
    async reserve(slug, profileId, metadata) {
        const streamId = streamOf(slug);
        for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            const last = await this.lastEvent(streamId);
            if (last?.type === 'SlugReserved') {
                const holder = last.data.profileId;
                if (holder !== profileId && (await this.isHeld(last))) {
                    throw new errors_1.ApiError('CONFLICT', `The slug "${slug}" is already taken.`, [
                        { field: 'slug', message: 'slug is already taken' },
                    ]);
                }
            }
            try {
                const { position } = await this.eventStore.appendToStream(streamId, (0, record_writer_1.withMetadata)([{ type: 'SlugReserved', data: { slug, profileId } }], metadata), last ? last.revision : 'no_stream');
                return position;
            }
            catch (error) {
                if (!(error instanceof event_store_port_1.WrongExpectedRevisionError))
                    throw error;
            }
        }
        throw new errors_1.ApiError('CONFLICT', `The slug "${slug}" is being claimed by others right now; try again.`, [
            { field: 'slug', message: 'slug is being claimed concurrently' },
        ]);
    }
    async release(slug, profileId, metadata, madeBy) {
        const streamId = streamOf(slug);
        const last = await this.lastEvent(streamId);
        if (last?.type !== 'SlugReserved' || last.data.profileId !== profileId)
            return;
        if (madeBy && (0, event_store_port_1.comparePositions)(last.position, madeBy) > 0)
            return;
        if (await this.carries(profileId, slug))
            return;
        try {
            await this.eventStore.appendToStream(streamId, (0, record_writer_1.withMetadata)([{ type: 'SlugReleased', data: { slug, profileId } }], metadata), last.revision);
        }
        catch (error) {
            if (!(error instanceof event_store_port_1.WrongExpectedRevisionError))
                throw error;
        }
    }
    async isHeld(reservation) {
        if (Date.now() - reservation.recordedAt.getTime() < exports.RESERVATION_GRACE_MS)
            return true;
        const { slug, profileId } = reservation.data;
        return this.carries(profileId, slug);
    }
    async carries(profileId, slug) {
        const { state } = await this.profiles.load(profileId);
        return !!state && !state.deleted && (0, profile_decider_1.slugKey)(state.fields.slug ?? '') === (0, profile_decider_1.slugKey)(slug);
    }
    async lastEvent(streamId) {
        const events = await this.eventStore.readStream(streamId);
        return events[events.length - 1];
    }
}
exports.SlugReservations = SlugReservations;
const streamOf = (slug) => `profile_slug-${(0, profile_decider_1.slugKey)(slug)}`;
//# sourceMappingURL=slug-reservations.js.map