"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.projectionsStatus = projectionsStatus;
exports.projectionsRebuild = projectionsRebuild;
const event_store_port_1 = require("../event-store/event-store.port");
const positions_1 = require("../projections/positions");
const rebuild_1 = require("../projections/rebuild");
const output_1 = require("./output");
const progress_1 = require("./progress");
const STALE_REBUILD_MS = 60_000;
async function projectionsStatus(readModels, eventStore, readStore, json) {
    const head = await eventStore.headPosition();
    const projections = [];
    for (const projection of readModels) {
        await readStore.ensureCollection(projection.schema);
        const { live, building } = await readStore.status(projection.schema.name);
        projections.push({
            name: projection.name,
            generation: live.generation,
            checkpoint: (0, positions_1.formatPosition)(live.position),
            lag: eventStore.eventsBetween(live.position ?? event_store_port_1.START, head),
            rebuild: building && {
                generation: building.generation,
                checkpoint: (0, positions_1.formatPosition)(building.position),
                state: Date.now() - building.updatedAt < STALE_REBUILD_MS ? 'running' : 'interrupted',
            },
            failure: live.failure,
        });
    }
    if (json)
        return JSON.stringify({ head: (0, positions_1.formatPosition)(head), projections }, null, 2) + '\n';
    return (`Event store head: ${(0, positions_1.formatPosition)(head)}\n\n` +
        (0, output_1.formatTable)(['PROJECTION', 'GENERATION', 'CHECKPOINT', 'LAG', 'REBUILD', 'FAILED ON'], projections.map((p) => [
            p.name,
            String(p.generation),
            p.checkpoint,
            p.lag === null ? 'unknown' : (0, output_1.count)(p.lag),
            p.rebuild ? `${p.rebuild.state} (generation ${p.rebuild.generation} at ${p.rebuild.checkpoint})` : '-',
            p.failure ? `${p.failure.streamId}@${p.failure.revision}: ${p.failure.error}` : '-',
        ])));
}
async function projectionsRebuild(selected, eventStore, readStore, options) {
    const progress = new progress_1.ProgressReporter();
    const names = selected.map((p) => p.name).join(', ');
    const seconds = options.graceMs / 1000;
    let results;
    try {
        results = await (0, rebuild_1.rebuildProjections)(selected, eventStore, readStore, {
            signal: options.signal,
            graceMs: options.graceMs,
            onProgress: (p) => progress.update(p),
            onLive: (live) => {
                const events = Math.max(...live.map((r) => r.events));
                progress.update({ projection: names, done: events, total: events }, { ms: Math.max(...live.map((r) => r.ms)) });
                const generations = live.map((r) => `${r.projection} ${r.generation}`).join(', ');
                process.stderr.write(`The rebuilt read models are live (generation ${generations}). The old storage is dropped in ${seconds}s, ` +
                    `once reads that started on it are done; Ctrl-C leaves it for the next rebuild or the service's next start to drop.\n`);
            },
        });
    }
    finally {
        progress.end();
    }
    process.stderr.write(options.signal.aborted
        ? `Interrupted in the grace period: the rebuilt read models stay live; the old storage is dropped by the next rebuild or the service's next start.\n`
        : `Dropped the old storage of ${names}.\n`);
    if (options.json)
        return JSON.stringify({ rebuilt: results.map((r) => ({ ...r, eventsPerSecond: rate(r) })) }, null, 2) + '\n';
    return (0, output_1.formatTable)(['PROJECTION', 'GENERATION', 'EVENTS', 'SECONDS', 'EVENTS/S'], results.map((r) => [r.projection, String(r.generation), (0, output_1.count)(r.events), (r.ms / 1000).toFixed(1), (0, output_1.count)(rate(r))]));
}
const rate = (r) => Math.round(r.events / Math.max(r.ms / 1000, 0.001));
//# sourceMappingURL=projections.js.map