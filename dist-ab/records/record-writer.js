"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RecordWriter = exports.SCHEMA_VERSION = void 0;
exports.eventMetadata = eventMetadata;
exports.withMetadata = withMetadata;
const uuid_1 = require("uuid");
const data_keys_1 = require("../erasure/data-keys");
const sealed_event_store_1 = require("../erasure/sealed-event-store");
const errors_1 = require("../errors");
const event_store_port_1 = require("../event-store/event-store.port");
const record_1 = require("./record");
exports.SCHEMA_VERSION = sealed_event_store_1.SEALED_SCHEMA_VERSION;
const MAX_ATTEMPTS = 10;
function eventMetadata(context, causationId) {
    return { accountId: context.accountId, correlationId: context.requestId, causationId, schemaVersion: exports.SCHEMA_VERSION };
}
function withMetadata(events, metadata) {
    return events.map((e) => ({ id: (0, uuid_1.v7)(), type: e.type, data: e.data, metadata }));
}
const FOLDED_RECORDS_KEPT = 10_000;
const NO_STREAM = { state: null, revision: 'no_stream', position: undefined };
class RecordWriter {
    constructor(kind, eventStore, projections, keepAtMost = FOLDED_RECORDS_KEPT) {
        this.kind = kind;
        this.eventStore = eventStore;
        this.projections = projections;
        this.keepAtMost = keepAtMost;
        this.folded = new Map();
    }
    async load(id) {
        const kept = this.folded.get(id);
        const events = await this.eventStore.readStream((0, record_1.streamIdOf)(this.kind, id), kept ? kept.revision + 1 : 0);
        let state = kept?.state ?? null;
        for (const event of events)
            state = (0, record_1.evolveRecord)(this.kind, state, event);
        const last = events[events.length - 1];
        const folded = last ? { state: state, revision: last.revision, position: last.position } : kept;
        if (!folded)
            return NO_STREAM;
        this.keep(id, folded);
        return folded;
    }
    async write(id, context, causationId, decide, { precondition, isNew = false } = {}) {
        for (let attempt = 1;; attempt++) {
            const guess = attempt === 1 ? (isNew ? NO_STREAM : this.folded.get(id)) : undefined;
            const { state, revision, position } = guess ?? (await this.load(id));
            let events;
            try {
                if (precondition)
                    this.checkPrecondition((0, record_1.ownedRecord)(this.kind, state, context.accountId), precondition);
                events = await decide(state);
            }
            catch (error) {
                if (guess && error instanceof errors_1.ApiError)
                    continue;
                throw error;
            }
            if (events.length === 0) {
                if (guess)
                    continue;
                if (position)
                    await this.projections.waitFor((0, record_1.streamIdOf)(this.kind, id), position);
                return null;
            }
            try {
                const streamId = (0, record_1.streamIdOf)(this.kind, id);
                const appended = withMetadata(events, eventMetadata(context, causationId));
                const written = await this.eventStore.appendToStream(streamId, appended, revision);
                if (state)
                    this.keepAppended(id, state, streamId, appended, written);
                await this.projections.waitFor(streamId, written.position);
                return written;
            }
            catch (error) {
                if (error instanceof data_keys_1.RecordErasedError)
                    throw (0, errors_1.notFound)(this.kind.label);
                if (!(error instanceof event_store_port_1.WrongExpectedRevisionError))
                    throw error;
                if (attempt === MAX_ATTEMPTS) {
                    throw new errors_1.ApiError('CONFLICT', `The ${this.kind.label.toLowerCase()} is being changed by others right now; try again.`);
                }
            }
        }
    }
    keepAppended(id, state, streamId, appended, written) {
        const first = written.revision - appended.length + 1;
        const recordedAt = new Date();
        const folded = appended.reduce((current, event, i) => (0, record_1.evolveRecord)(this.kind, current, { ...event, streamId, revision: first + i, position: written.position, recordedAt }), state);
        this.keep(id, { state: folded, revision: written.revision, position: written.position });
    }
    checkPrecondition(record, precondition) {
        if (precondition === '*' || precondition.includes(record.revision))
            return;
        throw new errors_1.ApiError('PRECONDITION_FAILED', `The ${this.kind.label.toLowerCase()} has changed since: its current ETag is "${record.revision}".`);
    }
    keep(id, folded) {
        const kept = this.folded.get(id);
        if (kept && kept.revision > folded.revision)
            return;
        this.folded.delete(id);
        this.folded.set(id, folded);
        if (this.folded.size > this.keepAtMost)
            this.folded.delete(this.folded.keys().next().value);
    }
}
exports.RecordWriter = RecordWriter;
//# sourceMappingURL=record-writer.js.map