"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SealedEventStore = exports.SEALED_SCHEMA_VERSION = void 0;
const data_keys_1 = require("./data-keys");
const opening_thread_1 = require("./opening-thread");
exports.SEALED_SCHEMA_VERSION = 2;
const READ_AHEAD = 2;
const OPEN_IN_THREAD_FROM = 256;
const isSealed = (event) => event.metadata.schemaVersion >= exports.SEALED_SCHEMA_VERSION && typeof event.data.sealed === 'string';
class SealedEventStore {
    constructor(inner, keys, kinds) {
        this.inner = inner;
        this.keys = keys;
        this.thread = opening_thread_1.OpeningThread.available ? new opening_thread_1.OpeningThread() : undefined;
        this.prefixes = kinds.map((k) => `${k.streamPrefix}-`);
        this.erasureTypes = new Set(kinds.map((k) => k.events.erased));
    }
    async appendToStream(streamId, events, expected) {
        if (!this.isRecord(streamId) || events.every((e) => Object.keys(e.data).length === 0)) {
            return this.inner.appendToStream(streamId, events, expected);
        }
        const key = await this.keys.forWriting(streamId, { isNew: expected === 'no_stream' });
        const sealed = events.map((event) => {
            const fields = Object.keys(event.data);
            if (fields.length === 0)
                return event;
            const data = { fields, sealed: (0, data_keys_1.seal)(key, JSON.stringify(fields.map((f) => event.data[f])), event.id) };
            return { ...event, data: data, metadata: { ...event.metadata, schemaVersion: exports.SEALED_SCHEMA_VERSION } };
        });
        return this.inner.appendToStream(streamId, sealed, expected);
    }
    async readStream(streamId, fromRevision) {
        const events = await this.inner.readStream(streamId, fromRevision);
        if (!this.isRecord(streamId))
            return events;
        return this.openAll(events, true);
    }
    headPosition() {
        return this.inner.headPosition();
    }
    eventsBetween(from, to) {
        return this.inner.eventsBetween(from, to);
    }
    async *subscribeToAll(from, options) {
        const stop = new AbortController();
        const onAbort = () => stop.abort();
        if (options.signal.aborted)
            stop.abort();
        else
            options.signal.addEventListener('abort', onAbort, { once: true });
        const batches = this.inner.subscribeToAll(from, { ...options, signal: stop.signal })[Symbol.asyncIterator]();
        const ahead = [];
        const readAhead = () => {
            while (ahead.length < READ_AHEAD) {
                const next = this.nextOpened(batches);
                next.catch(() => undefined);
                ahead.push(next);
            }
        };
        try {
            readAhead();
            for (let batch = await ahead.shift(); batch; batch = await ahead.shift()) {
                if (stop.signal.aborted)
                    return;
                readAhead();
                yield batch;
            }
        }
        finally {
            options.signal.removeEventListener('abort', onAbort);
            stop.abort();
            void batches.return?.(undefined).catch(() => undefined);
        }
    }
    async close() {
        await this.thread?.close();
        await this.inner.close();
        await this.keys.store.close();
    }
    async nextOpened(batches) {
        const { done, value } = await batches.next();
        return done ? undefined : { events: await this.openAll(value.events, false), position: value.position };
    }
    isRecord(streamId) {
        return this.prefixes.some((p) => streamId.startsWith(p));
    }
    async openAll(events, keep) {
        const keyIds = new Set();
        for (const event of events) {
            if (this.erasureTypes.has(event.type))
                this.keys.forget(event.streamId);
            else if (isSealed(event) && this.isRecord(event.streamId))
                keyIds.add(event.streamId);
        }
        if (keyIds.size === 0)
            return events;
        const keys = await this.keys.forReading(keyIds, { keep });
        const sealed = events.filter((event) => keyIds.has(event.streamId) && isSealed(event));
        const keyOf = (event) => keys.get(event.streamId);
        const valuesOf = (event) => event.data.sealed;
        const opened = this.thread && sealed.length >= OPEN_IN_THREAD_FROM
            ? await this.thread.open(sealed.map(valuesOf), sealed.map((e) => e.id), sealed.map(keyOf))
            : sealed.map((event) => (0, data_keys_1.openOrNull)(keyOf(event), valuesOf(event), event.id));
        sealed.forEach((event, i) => setValues(event, opened[i]));
        return events;
    }
}
exports.SealedEventStore = SealedEventStore;
function setValues(event, opened) {
    const { fields } = event.data;
    const values = opened === null ? null : JSON.parse(opened);
    const data = {};
    fields.forEach((field, i) => (data[field] = values ? values[i] : ''));
    event.data = data;
}
//# sourceMappingURL=sealed-event-store.js.map