import { EventStore, START } from '../event-store/event-store.port';
import { formatPosition } from '../projections/positions';
import type { Projection } from '../projections/projection';
import { rebuildProjections, RebuildResult } from '../projections/rebuild';
import type { GenerationStatus, ReadDocuments, ReadGenerations } from '../read-store/read-store.port';
import { count, formatTable } from './output';
import { ProgressReporter } from './progress';

/** A building generation with no commit for this long is an interrupted rebuild's leftover, not a running one. */
const STALE_REBUILD_MS = 60_000;

interface ProjectionStatus {
  name: string;
  generation: number;
  checkpoint: string;
  /** Events behind the head; null where the event store cannot count them (EventStoreDB). */
  lag: number | null;
  rebuild: { generation: number; checkpoint: string; state: 'running' | 'interrupted' } | null;
  failure: GenerationStatus['failure'];
  /** Streams parked in the live generation at an event it cannot fold, and the events they hold (see projections parked). */
  parked: { streams: number; events: number };
}

/** `projections status`: how far each read model is, from what the stores keep (the service may be elsewhere). */
export async function projectionsStatus(readModels: Projection[], eventStore: EventStore, readStore: ReadGenerations, json: boolean): Promise<string> {
  const head = await eventStore.headPosition();
  const projections: ProjectionStatus[] = [];
  for (const projection of readModels) {
    await readStore.ensureCollection(projection.schema);
    const { live, building } = await readStore.status(projection.schema.name);
    projections.push({
      name: projection.name,
      generation: live.generation,
      checkpoint: formatPosition(live.position),
      lag: eventStore.eventsBetween(live.position ?? START, head),
      rebuild: building && {
        generation: building.generation,
        checkpoint: formatPosition(building.position),
        state: Date.now() - building.updatedAt < STALE_REBUILD_MS ? 'running' : 'interrupted',
      },
      failure: live.failure,
      parked: await readStore.parkedCount(projection.schema.name, live.generation),
    });
  }
  if (json) return JSON.stringify({ head: formatPosition(head), projections }, null, 2) + '\n';
  return (
    `Event store head: ${formatPosition(head)}\n\n` +
    formatTable(
      ['PROJECTION', 'GENERATION', 'CHECKPOINT', 'LAG', 'REBUILD', 'PARKED', 'FAILED ON'],
      projections.map((p) => [
        p.name,
        String(p.generation),
        p.checkpoint,
        p.lag === null ? 'unknown' : count(p.lag),
        p.rebuild ? `${p.rebuild.state} (generation ${p.rebuild.generation} at ${p.rebuild.checkpoint})` : '-',
        p.parked.streams === 0 ? '-' : `${count(p.parked.streams)} streams (${count(p.parked.events)} events)`,
        p.failure ? `${p.failure.streamId}@${p.failure.revision}: ${p.failure.error}` : '-',
      ]),
    )
  );
}

/** `projections rebuild <name|all>`: the read models in one pass over the events, with progress on stderr. */
export async function projectionsRebuild(
  selected: Projection[],
  eventStore: EventStore,
  readStore: ReadDocuments & ReadGenerations,
  options: { json: boolean; graceMs: number; signal: AbortSignal; park?: boolean },
): Promise<string> {
  const progress = new ProgressReporter();
  const names = selected.map((p) => p.name).join(', ');
  const seconds = options.graceMs / 1000;
  let results: RebuildResult[];
  try {
    results = await rebuildProjections(selected, eventStore, readStore, {
      signal: options.signal,
      graceMs: options.graceMs,
      park: options.park === true,
      onParked: (projection, streamId, revision, reason) =>
        process.stderr.write(`${projection.name}: parked ${streamId} at revision ${revision} and the events after it: ${reason}\n`),
      onProgress: (p) => progress.update(p),
      onLive: (live) => {
        const events = Math.max(...live.map((r) => r.events));
        progress.update({ projection: names, done: events, total: events }, { ms: Math.max(...live.map((r) => r.ms)) });
        const generations = live.map((r) => `${r.projection} ${r.generation}`).join(', ');
        process.stderr.write(
          `The rebuilt read models are live (generation ${generations}). The old storage is dropped in ${seconds}s, ` +
            `once reads that started on it are done; Ctrl-C leaves it for the next rebuild or the service's next start to drop.\n`,
        );
      },
    });
  } finally {
    progress.end();
  }
  process.stderr.write(
    options.signal.aborted
      ? `Interrupted in the grace period: the rebuilt read models stay live; the old storage is dropped by the next rebuild or the service's next start.\n`
      : `Dropped the old storage of ${names}.\n`,
  );
  if (options.json) return JSON.stringify({ rebuilt: results.map((r) => ({ ...r, eventsPerSecond: rate(r) })) }, null, 2) + '\n';
  return formatTable(
    ['PROJECTION', 'GENERATION', 'EVENTS', 'SECONDS', 'EVENTS/S'],
    results.map((r) => [r.projection, String(r.generation), count(r.events), (r.ms / 1000).toFixed(1), count(rate(r))]),
  );
}

const rate = (r: RebuildResult) => Math.round(r.events / Math.max(r.ms / 1000, 0.001));
