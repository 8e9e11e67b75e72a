"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RebuildInterruptedError = exports.REBUILD_GRACE_MS = void 0;
exports.rebuildProjections = rebuildProjections;
const promises_1 = require("node:timers/promises");
const event_store_port_1 = require("../event-store/event-store.port");
const read_store_port_1 = require("../read-store/read-store.port");
const projector_1 = require("./projector");
const REBUILD_BATCH = 5000;
exports.REBUILD_GRACE_MS = 10_000;
class RebuildInterruptedError extends Error {
    constructor() {
        super(...arguments);
        this.name = 'RebuildInterruptedError';
    }
}
exports.RebuildInterruptedError = RebuildInterruptedError;
async function rebuildProjections(projections, eventStore, readStore, options) {
    const started = Date.now();
    const targets = [];
    let head = event_store_port_1.START;
    let done = 0;
    const names = projections.map((p) => p.name).join(', ');
    const report = (swapping = false) => {
        const total = eventStore.eventsBetween(event_store_port_1.START, head);
        options.onProgress?.({ projection: names, done, total: total === null ? null : Math.max(done, total), ...(swapping ? { swapping } : {}) });
    };
    const pending = () => targets.filter((t) => !t.result);
    const promote = async () => {
        for (const target of pending()) {
            try {
                await readStore.promote(target.projection.schema.name, target.generation);
                target.result = { projection: target.projection.name, generation: target.generation, events: done, ms: Date.now() - started };
                await options.onPromoted?.(target.projection);
            }
            catch (error) {
                if (!(error instanceof read_store_port_1.RebuildBehindError))
                    throw error;
            }
        }
        if (pending().length > 0)
            head = await eventStore.headPosition();
        return pending().length === 0;
    };
    try {
        for (const projection of projections) {
            await readStore.ensureCollection(projection.schema);
            await readStore.dropRetired(projection.schema.name, options.graceMs);
            targets.push({ projection, generation: await readStore.startRebuild(projection.schema.name) });
        }
        head = await eventStore.headPosition();
        report();
        let finished = (0, event_store_port_1.comparePositions)(head, event_store_port_1.START) <= 0 && (await promote());
        if (!finished) {
            for await (const batch of eventStore.subscribeToAll(event_store_port_1.START, { signal: options.signal, maxBatchSize: REBUILD_BATCH })) {
                for (const target of pending())
                    await (0, projector_1.foldBatch)(target.projection, readStore, target.generation, batch);
                done += batch.events.length;
                await (0, promises_1.setImmediate)();
                const caughtUp = (0, event_store_port_1.comparePositions)(batch.position, head) >= 0;
                report(caughtUp);
                if (caughtUp && (await promote())) {
                    finished = true;
                    break;
                }
            }
        }
        if (!finished) {
            const left = pending().map((t) => t.projection.name).join(', ');
            throw new RebuildInterruptedError(`Rebuild interrupted: the live read model of ${left} is unchanged`);
        }
    }
    catch (error) {
        for (const target of pending())
            await readStore.abandonRebuild(target.projection.schema.name, target.generation).catch(() => undefined);
        throw error;
    }
    const results = targets.map((t) => t.result);
    options.onLive?.(results);
    await sleep(options.graceMs, options.signal);
    if (!options.signal.aborted)
        for (const p of projections)
            await readStore.dropRetired(p.schema.name, options.graceMs);
    return results;
}
function sleep(ms, signal) {
    return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        function done() {
            clearTimeout(timer);
            signal.removeEventListener('abort', done);
            resolve();
        }
    });
}
//# sourceMappingURL=rebuild.js.map