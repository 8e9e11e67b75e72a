"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EventStoreDbEventStore = void 0;
const common_1 = require("@nestjs/common");
const db_client_1 = require("@eventstore/db-client");
const config_1 = require("../config/config");
const store_unavailable_error_1 = require("../storage/store-unavailable.error");
const event_store_port_1 = require("./event-store.port");
const eventstoredb_mapping_1 = require("./eventstoredb-mapping");
const DEFAULT_BATCH = 1000;
const APPEND_ATTEMPTS = 3;
const HEAD_PAGE = 32;
class EventStoreDbEventStore {
    constructor(client, deadlineMs) {
        this.client = client;
        this.deadlineMs = deadlineMs;
        this.logger = new common_1.Logger('EventStoreDB');
        this.logEnd = event_store_port_1.START;
    }
    static async connect(connectionString, timeoutMs) {
        let client;
        try {
            client = db_client_1.EventStoreDBClient.connectionString(connectionString);
        }
        catch (error) {
            throw new config_1.ConfigError(`EVENTSTORE_CONNECTION_STRING cannot be parsed: ${error.message}`);
        }
        const store = new EventStoreDbEventStore(client, timeoutMs);
        try {
            await store.headPosition();
        }
        catch (error) {
            await store.close();
            throw error instanceof store_unavailable_error_1.StoreUnavailableError ? error : new store_unavailable_error_1.StoreUnavailableError('EventStoreDB', error.message);
        }
        return store;
    }
    async appendToStream(streamId, events, expected) {
        if (events.length === 0)
            throw new Error('appendToStream needs at least one event');
        const data = events.map((e) => (0, db_client_1.jsonEvent)({ id: e.id, type: e.type, data: e.data, metadata: { ...e.metadata } }));
        const expectedRevision = (0, eventstoredb_mapping_1.toEsdbExpectedRevision)(expected);
        for (let attempt = 1;; attempt++) {
            try {
                const result = await this.withinDeadline(this.client.appendToStream(streamId, data, { expectedRevision, deadline: this.deadlineMs }));
                const position = result.position ?? (await this.positionOf(streamId, result.nextExpectedRevision));
                return { revision: (0, eventstoredb_mapping_1.fromEsdbRevision)(result.nextExpectedRevision), position };
            }
            catch (error) {
                if (!(0, eventstoredb_mapping_1.isTransientEsdbError)(error) || attempt === APPEND_ATTEMPTS)
                    throw (0, eventstoredb_mapping_1.translateEsdbError)(error, streamId, expected);
                await sleep((0, eventstoredb_mapping_1.retryDelayMs)(attempt));
            }
        }
    }
    async readStream(streamId, fromRevision = 0) {
        const events = [];
        try {
            await this.eachEvent(this.client.readStream(streamId, { fromRevision: BigInt(fromRevision) }), (resolved) => {
                if (resolved.event)
                    events.push((0, eventstoredb_mapping_1.toStoredEvent)(resolved.event));
            });
        }
        catch (error) {
            if (error instanceof db_client_1.StreamNotFoundError)
                return [];
            throw (0, eventstoredb_mapping_1.translateEsdbError)(error);
        }
        return events;
    }
    async headPosition() {
        try {
            let from = db_client_1.END;
            for (;;) {
                const page = [];
                let head;
                await this.eachEvent(this.client.readAll({ direction: db_client_1.BACKWARDS, fromPosition: from, maxCount: HEAD_PAGE }), (resolved) => {
                    const event = resolved.event;
                    if (!event?.position)
                        return;
                    const position = { commit: event.position.commit, prepare: event.position.prepare };
                    if (from !== db_client_1.END && (0, event_store_port_1.comparePositions)(position, from) >= 0)
                        return;
                    page.push(position);
                    if (!head && !isSystemStream(event.streamId))
                        head = position;
                });
                if (head)
                    return head;
                if (page.length === 0)
                    return event_store_port_1.START;
                from = page[page.length - 1];
            }
        }
        catch (error) {
            throw (0, eventstoredb_mapping_1.translateEsdbError)(error);
        }
    }
    eventsBetween() {
        return null;
    }
    async *subscribeToAll(from, options) {
        const { signal } = options;
        const maxBatchSize = options.maxBatchSize ?? DEFAULT_BATCH;
        let position = await this.withinLog(from);
        let failures = 0;
        while (!signal.aborted) {
            const subscription = this.client.subscribeToAll({
                fromPosition: (0, event_store_port_1.comparePositions)(position, event_store_port_1.START) === 0 ? db_client_1.START : position,
                filter: (0, eventstoredb_mapping_1.subscriptionFilter)(options.streamPrefix, (sub, checkpoint) => {
                    sub.push({ checkpoint });
                }),
            }, { highWaterMark: maxBatchSize });
            const stop = () => subscription.destroy();
            signal.addEventListener('abort', stop, { once: true });
            const unconfirmed = setTimeout(() => subscription.destroy(new store_unavailable_error_1.StoreUnavailableError('EventStoreDB', `no subscription confirmation within ${this.deadlineMs} ms`)), this.deadlineMs);
            subscription.once('confirmation', () => clearTimeout(unconfirmed));
            try {
                let events = [];
                let batchPosition = position;
                for await (const message of subscription) {
                    clearTimeout(unconfirmed);
                    failures = 0;
                    if ('checkpoint' in message) {
                        if ((0, event_store_port_1.comparePositions)(message.checkpoint, batchPosition) > 0 && (await this.isInLog(message.checkpoint))) {
                            batchPosition = message.checkpoint;
                        }
                    }
                    else if (message.event) {
                        const event = (0, eventstoredb_mapping_1.toStoredEvent)(message.event);
                        events.push(event);
                        batchPosition = event.position;
                    }
                    if (isDrained(subscription) || events.length >= maxBatchSize) {
                        if (events.length > 0 || (0, event_store_port_1.comparePositions)(batchPosition, position) > 0) {
                            yield { events, position: batchPosition };
                            position = batchPosition;
                        }
                        events = [];
                    }
                }
                if (signal.aborted)
                    return;
                failures += 1;
                this.logger.warn(`Subscription ended by the server; resubscribing in ${(0, eventstoredb_mapping_1.retryDelayMs)(failures)} ms`);
            }
            catch (error) {
                if (signal.aborted)
                    return;
                if (!(error instanceof store_unavailable_error_1.StoreUnavailableError) && !(0, eventstoredb_mapping_1.isTransientEsdbError)(error))
                    throw (0, eventstoredb_mapping_1.translateEsdbError)(error);
                failures += 1;
                this.logger.warn(`Subscription lost (${error.message}); resubscribing in ${(0, eventstoredb_mapping_1.retryDelayMs)(failures)} ms`);
            }
            finally {
                clearTimeout(unconfirmed);
                signal.removeEventListener('abort', stop);
                void subscription.unsubscribe().catch(() => undefined);
            }
            await sleep((0, eventstoredb_mapping_1.retryDelayMs)(failures), signal);
        }
    }
    async close() {
        await this.withinDeadline(this.client.dispose()).catch((error) => this.logger.warn(`Closing: ${error.message}`));
    }
    async isInLog(checkpoint) {
        if ((0, event_store_port_1.comparePositions)(checkpoint, this.logEnd) <= 0)
            return true;
        this.logEnd = await this.readLogEnd();
        if ((0, event_store_port_1.comparePositions)(checkpoint, this.logEnd) <= 0)
            return true;
        this.logger.warn(`Ignored a checkpoint beyond the end of the log (${checkpoint.commit}/${checkpoint.prepare})`);
        return false;
    }
    async withinLog(from) {
        if ((0, event_store_port_1.comparePositions)(from, event_store_port_1.START) === 0 || (await this.isInLog(from)))
            return from;
        this.logger.error(`Position ${from.commit}/${from.prepare} is beyond the end of the log: folding again from the start`);
        return event_store_port_1.START;
    }
    async readLogEnd() {
        let end = event_store_port_1.START;
        try {
            await this.eachEvent(this.client.readAll({ direction: db_client_1.BACKWARDS, fromPosition: db_client_1.END, maxCount: 1 }), (resolved) => {
                if (resolved.event?.position)
                    end = { commit: resolved.event.position.commit, prepare: resolved.event.position.prepare };
            });
        }
        catch (error) {
            throw (0, eventstoredb_mapping_1.translateEsdbError)(error);
        }
        return end;
    }
    async positionOf(streamId, revision) {
        let position;
        await this.eachEvent(this.client.readStream(streamId, { fromRevision: revision, maxCount: 1 }), (resolved) => {
            if (resolved.event)
                position = (0, eventstoredb_mapping_1.toStoredEvent)(resolved.event).position;
        });
        if (!position)
            throw new Error(`EventStoreDB has no event ${streamId}@${revision} right after appending it`);
        return position;
    }
    async eachEvent(read, visit) {
        let silent = false;
        let timer;
        const arm = () => {
            clearTimeout(timer);
            timer = setTimeout(() => {
                silent = true;
                void read.cancel().catch(() => undefined);
                read.destroy();
            }, this.deadlineMs);
        };
        arm();
        try {
            for await (const resolved of read) {
                visit(resolved);
                arm();
            }
        }
        catch (error) {
            if (!silent)
                throw error;
        }
        finally {
            clearTimeout(timer);
        }
        if (silent)
            throw new store_unavailable_error_1.StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`);
    }
    withinDeadline(call) {
        let timer;
        const deadline = new Promise((_, reject) => {
            timer = setTimeout(() => reject(new store_unavailable_error_1.StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`)), this.deadlineMs);
        });
        call.catch(() => undefined);
        return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
    }
}
exports.EventStoreDbEventStore = EventStoreDbEventStore;
const isSystemStream = (streamId) => streamId.startsWith('$');
function isDrained(subscription) {
    return subscription.readableLength === 0;
}
function sleep(ms, signal) {
    return new Promise((resolve) => {
        const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener('abort', done, { once: true });
    });
}
//# sourceMappingURL=eventstoredb-event-store.js.map