"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.InstrumentedReadStore = exports.InstrumentedEventStore = void 0;
class InstrumentedEventStore {
    constructor(store, metrics) {
        this.store = store;
        this.metrics = metrics;
    }
    async appendToStream(streamId, events, expected) {
        const result = await this.metrics.time(this.metrics.eventStoreDuration, 'appendToStream', () => this.store.appendToStream(streamId, events, expected));
        for (const event of events)
            this.metrics.eventsAppended.inc({ type: event.type });
        return result;
    }
    readStream(streamId, fromRevision) {
        return this.metrics.time(this.metrics.eventStoreDuration, 'readStream', () => this.store.readStream(streamId, fromRevision));
    }
    headPosition() {
        return this.metrics.time(this.metrics.eventStoreDuration, 'headPosition', () => this.store.headPosition());
    }
    eventsBetween(from, to) {
        return this.store.eventsBetween(from, to);
    }
    subscribeToAll(from, options) {
        return this.store.subscribeToAll(from, options);
    }
    close() {
        return this.store.close();
    }
}
exports.InstrumentedEventStore = InstrumentedEventStore;
class InstrumentedReadStore {
    constructor(store, metrics) {
        this.store = store;
        this.metrics = metrics;
    }
    ensureCollection(schema) {
        return this.metrics.time(this.metrics.readStoreDuration, 'ensureCollection', () => this.store.ensureCollection(schema));
    }
    getMany(collection, ids, generation) {
        return this.metrics.time(this.metrics.readStoreDuration, 'getMany', () => this.store.getMany(collection, ids, generation));
    }
    get(collection, accountId, id) {
        return this.metrics.time(this.metrics.readStoreDuration, 'get', () => this.store.get(collection, accountId, id));
    }
    oldest(collection, accountId) {
        return this.metrics.time(this.metrics.readStoreDuration, 'oldest', () => this.store.oldest(collection, accountId));
    }
    find(collection, query) {
        return this.metrics.time(this.metrics.readStoreDuration, 'find', () => this.store.find(collection, query));
    }
    commit(collection, documents, checkpoint) {
        return this.metrics.time(this.metrics.readStoreDuration, 'commit', () => this.store.commit(collection, documents, checkpoint));
    }
    recordFailure(collection, generation, failure) {
        return this.metrics.time(this.metrics.readStoreDuration, 'recordFailure', () => this.store.recordFailure(collection, generation, failure));
    }
    status(collection) {
        return this.metrics.time(this.metrics.readStoreDuration, 'status', () => this.store.status(collection));
    }
    startRebuild(collection) {
        return this.metrics.time(this.metrics.readStoreDuration, 'startRebuild', () => this.store.startRebuild(collection));
    }
    promote(collection, generation) {
        return this.metrics.time(this.metrics.readStoreDuration, 'promote', () => this.store.promote(collection, generation));
    }
    abandonRebuild(collection, generation) {
        return this.metrics.time(this.metrics.readStoreDuration, 'abandonRebuild', () => this.store.abandonRebuild(collection, generation));
    }
    erase(collection, id) {
        return this.metrics.time(this.metrics.readStoreDuration, 'erase', () => this.store.erase(collection, id));
    }
    dropRetired(collection, graceMs) {
        return this.metrics.time(this.metrics.readStoreDuration, 'dropRetired', () => this.store.dropRetired(collection, graceMs));
    }
    acquireLease(name, holder, ttlMs, replacing) {
        return this.metrics.time(this.metrics.readStoreDuration, 'acquireLease', () => this.store.acquireLease(name, holder, ttlMs, replacing));
    }
    releaseLease(name, holder) {
        return this.metrics.time(this.metrics.readStoreDuration, 'releaseLease', () => this.store.releaseLease(name, holder));
    }
    close() {
        return this.store.close();
    }
}
exports.InstrumentedReadStore = InstrumentedReadStore;
//# sourceMappingURL=instrumented-stores.js.map