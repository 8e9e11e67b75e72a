"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Projector = exports.FOLLOW_POLL_MS = exports.PoisonEventError = void 0;
exports.foldBatch = foldBatch;
const common_1 = require("@nestjs/common");
const promises_1 = require("node:timers/promises");
const event_store_port_1 = require("../event-store/event-store.port");
const read_store_port_1 = require("../read-store/read-store.port");
const instance_1 = require("../instance");
class PoisonEventError extends Error {
    constructor(streamId, revision, error) {
        const reason = error instanceof Error ? error.message : String(error);
        super(`cannot apply ${streamId}@${revision}: ${reason}`);
        this.streamId = streamId;
        this.revision = revision;
        this.name = 'PoisonEventError';
        this.reason = reason;
    }
}
exports.PoisonEventError = PoisonEventError;
const RETRY_DELAY_MS = 1000;
const MAX_BATCH = 5000;
async function foldBatch(projection, readStore, generation, batch) {
    const prefix = `${projection.streamPrefix}-`;
    const relevant = batch.events.filter((e) => e.streamId.startsWith(prefix));
    const collection = projection.schema.name;
    const idOf = (streamId) => streamId.slice(prefix.length);
    const started = new Set();
    const existing = new Set();
    for (const event of relevant) {
        const id = idOf(event.streamId);
        if (event.revision === 0)
            started.add(id);
        else if (!started.has(id))
            existing.add(id);
    }
    const documents = await readStore.getMany(collection, [...existing], generation);
    const changed = new Map();
    for (const event of relevant) {
        const id = idOf(event.streamId);
        const current = documents.get(id) ?? null;
        if (current && event.revision <= current.revision)
            continue;
        let next;
        try {
            next = projection.evolve(current, event);
        }
        catch (error) {
            throw new PoisonEventError(event.streamId, event.revision, error);
        }
        documents.set(id, next);
        changed.set(id, next);
    }
    await readStore.commit(collection, [...changed.values()], { generation, position: batch.position });
}
exports.FOLLOW_POLL_MS = 10;
class Projector {
    constructor(projection, eventStore, readStore, lease) {
        this.projection = projection;
        this.eventStore = eventStore;
        this.readStore = readStore;
        this.lease = lease;
        this.abort = new AbortController();
        this.position = event_store_port_1.START;
        this.generation = 0;
        this.waiters = [];
        this.unhear = () => { };
        this.state = 'starting';
        this.folding = false;
        this.logger = new common_1.Logger(`Projector:${projection.name}`);
    }
    get checkpoint() {
        return this.position;
    }
    async start() {
        await this.readStore.ensureCollection(this.projection.schema);
        await this.loadLiveGeneration();
        this.state = 'running';
        this.unhear = instance_1.siblings.hear('folded', () => {
            if (!this.folding && this.waiters.length > 0)
                this.wake?.();
        });
        this.loop = this.run();
    }
    async stop() {
        this.unhear();
        this.abort.abort();
        this.wake?.();
        await this.loop;
        await this.readStore.releaseLease(this.leaseName, this.lease.holder).catch(() => undefined);
        if (this.state === 'running')
            this.state = 'stopped';
        this.rejectWaiters(new Error(`projection ${this.projection.name} stopped`));
    }
    waitFor(position, timeoutMs) {
        if ((0, event_store_port_1.comparePositions)(this.position, position) >= 0)
            return Promise.resolve();
        if (this.state !== 'running')
            return Promise.reject(this.failure ?? new Error(`projection ${this.projection.name} is ${this.state}`));
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                this.waiters = this.waiters.filter((w) => w !== waiter);
                reject(new Error(`projection ${this.projection.name} did not reach the write within ${timeoutMs} ms`));
            }, timeoutMs);
            const waiter = {
                position,
                resolve: () => (clearTimeout(timer), resolve()),
                reject: (e) => (clearTimeout(timer), reject(e)),
            };
            this.waiters.push(waiter);
            if (this.waiters.length === 1)
                this.wake?.();
        });
    }
    get streamPrefix() {
        return `${this.projection.streamPrefix}-`;
    }
    get leaseName() {
        return this.projection.schema.name;
    }
    async run() {
        const { signal } = this.abort;
        while (!signal.aborted && this.state === 'running') {
            const held = await this.takeLease().catch((error) => {
                this.logger.warn(`Could not take the lease: ${error.message}`);
                return false;
            });
            if (held)
                await this.fold();
            else
                await this.follow();
        }
    }
    async takeLease() {
        const { holder, ttlMs } = this.lease;
        const current = await this.readStore.acquireLease(this.leaseName, holder, ttlMs);
        if (current === holder)
            return true;
        if (!(0, instance_1.isGoneFromThisMachine)(current))
            return false;
        const replaced = (await this.readStore.acquireLease(this.leaseName, holder, ttlMs, current)) === holder;
        if (replaced)
            this.logger.log(`Took the lease over from ${current}, which no longer runs`);
        return replaced;
    }
    async fold() {
        this.folding = true;
        this.logger.log(`Folding (holder ${this.lease.holder})`);
        const lost = new AbortController();
        const signal = AbortSignal.any([this.abort.signal, lost.signal]);
        let renewing = Promise.resolve();
        const renew = setInterval(() => {
            renewing = this.readStore.acquireLease(this.leaseName, this.lease.holder, this.lease.ttlMs).then((current) => current === this.lease.holder || lost.abort(), () => lost.abort());
        }, this.lease.ttlMs / 3);
        try {
            const loaded = await this.loadLiveGeneration().then(() => true, (error) => this.logger.warn(`Could not read the checkpoint: ${error.message}`));
            if (!loaded)
                return void (await this.pause(RETRY_DELAY_MS));
            while (!signal.aborted) {
                try {
                    const streamPrefix = this.streamPrefix;
                    for await (const batch of this.eventStore.subscribeToAll(this.position, { signal, streamPrefix, maxBatchSize: MAX_BATCH })) {
                        await this.apply(batch);
                        await (0, promises_1.setImmediate)();
                    }
                }
                catch (error) {
                    if (error instanceof PoisonEventError)
                        return await this.stopOnPoison(error);
                    if (error instanceof read_store_port_1.GenerationReplacedError) {
                        const replaced = this.generation;
                        if (await this.loadLiveGeneration().then(() => true, () => false)) {
                            this.logger.log(`Generation ${replaced} was replaced by a rebuild: continuing in generation ${this.generation}`);
                            continue;
                        }
                    }
                    this.logger.warn(`Subscription failed, retrying in ${RETRY_DELAY_MS} ms: ${error.message}`);
                    await (0, promises_1.setTimeout)(RETRY_DELAY_MS, undefined, { signal }).catch(() => undefined);
                    await this.loadLiveGeneration().catch(() => undefined);
                }
            }
            if (lost.signal.aborted && !this.abort.signal.aborted)
                this.logger.warn('Lost the lease: another instance folds now');
        }
        finally {
            clearInterval(renew);
            await renewing;
            this.folding = false;
        }
    }
    async follow() {
        const until = Date.now() + this.lease.ttlMs / 3;
        while (!this.abort.signal.aborted && this.state === 'running') {
            try {
                const { live } = await this.readStore.status(this.projection.schema.name);
                if (live.failure) {
                    this.state = 'failed';
                    this.failure = new PoisonEventError(live.failure.streamId, live.failure.revision, live.failure.error);
                    this.rejectWaiters(this.failure);
                    return;
                }
                this.generation = live.generation;
                if (live.position && (0, event_store_port_1.comparePositions)(live.position, this.position) > 0)
                    this.position = live.position;
                this.resolveWaiters();
            }
            catch (error) {
                this.logger.warn(`Could not read the checkpoint: ${error.message}`);
            }
            const left = until - Date.now();
            if (left <= 0)
                return;
            await this.pause(this.waiters.length > 0 ? Math.min(exports.FOLLOW_POLL_MS, left) : left);
        }
    }
    pause(ms) {
        return new Promise((resolve) => {
            const timer = setTimeout(done, ms);
            this.wake = done;
            function done() {
                clearTimeout(timer);
                resolve();
            }
        }).finally(() => (this.wake = undefined));
    }
    async stopOnPoison(error) {
        this.state = 'failed';
        this.failure = error;
        this.logger.error(`Projection stopped on a poison event: ${error.message}`);
        this.rejectWaiters(error);
        await this.readStore
            .recordFailure(this.projection.schema.name, this.generation, {
            streamId: error.streamId,
            revision: error.revision,
            error: error.reason,
        })
            .catch((e) => this.logger.error(`Could not record the failure: ${e.message}`));
    }
    async loadLiveGeneration() {
        const { live } = await this.readStore.status(this.projection.schema.name);
        this.generation = live.generation;
        this.position = live.position ?? event_store_port_1.START;
        this.resolveWaiters();
    }
    async apply(batch) {
        await foldBatch(this.projection, this.readStore, this.generation, batch);
        this.position = batch.position;
        this.resolveWaiters();
        if (batch.events.length > 0)
            instance_1.siblings.tell('folded');
    }
    resolveWaiters() {
        const still = [];
        for (const w of this.waiters) {
            if ((0, event_store_port_1.comparePositions)(this.position, w.position) >= 0)
                w.resolve();
            else
                still.push(w);
        }
        this.waiters = still;
    }
    rejectWaiters(error) {
        for (const w of this.waiters)
            w.reject(error);
        this.waiters = [];
    }
}
exports.Projector = Projector;
//# sourceMappingURL=projector.js.map