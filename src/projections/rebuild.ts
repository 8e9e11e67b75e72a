import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { comparePositions, EventStore, START } from '../event-store/event-store.port';
import { ReadDocuments, ReadGenerations, RebuildBehindError } from '../read-store/read-store.port';
import type { Projection } from './projection';
import { foldBatch } from './fold-batch';
import type { Parking } from './parked';
import { inSpan } from '../tracing/tracing';

/**
 * Larger than the live projector's batches (a rebuild has no reader waiting on it, and each batch is
 * one transaction per read model), but not so large that the service's writes wait long for the lock,
 * nor that the batches held at once (read ahead, opened, folded) outlive the young generation's
 * collections, which would copy and promote them: memory, for no speed (docs/benchmarks.md).
 */
const REBUILD_BATCH = 1000;

/** How long a replaced generation stays readable by default: the service's reads that resolved it just before the swap. */
export const REBUILD_GRACE_MS = 10_000;

export interface RebuildProgress {
  /** The read models being rebuilt, comma-separated. */
  projection: string;
  /**
   * Events read so far, and how many the store held when the rebuild started (both grow as it
   * catches up); total is null where the event store cannot count them (EventStoreDB).
   */
  done: number;
  total: number | null;
  /** Set once every event is in: the indexes are being built and the new storage swapped in. */
  swapping?: boolean;
}

export interface RebuildResult {
  projection: string;
  generation: number;
  /** Events replayed until this read model was promoted. */
  events: number;
  ms: number;
}

export class RebuildInterruptedError extends Error {
  override name = 'RebuildInterruptedError';
}

interface Target {
  projection: Projection;
  generation: number;
  /** With `park`: the streams this rebuild parked in its generation. */
  parking?: Parking;
  result?: RebuildResult;
}

/**
 * Replays every event, in one pass, into a new generation of each projection's read model, catches
 * up with the head and promotes each; the service keeps reading the live generations until then.
 * If a live one got ahead (the service folded newer events meanwhile), that rebuild catches up and
 * tries again. Interrupted (signal, crash), it leaves the live generations it did not promote
 * untouched; the next rebuild drops what it left. A replaced generation is dropped after
 * `graceMs`, once reads that resolved it just before the swap are done.
 */
export function rebuildProjections(
  projections: Projection[],
  eventStore: EventStore,
  readStore: ReadDocuments & ReadGenerations,
  options: RebuildOptions,
): Promise<RebuildResult[]> {
  // One trace per rebuild (where traces are exported), with a span per batch.
  const names = projections.map((p) => p.name).join(', ');
  return inSpan(
    'rebuild',
    () => ({ 'rebuild.read_models': names }),
    () => rebuild(projections, eventStore, readStore, options),
    { root: true },
  );
}

export interface RebuildOptions {
  signal: AbortSignal;
  graceMs: number;
  onProgress?: (progress: RebuildProgress) => void;
  /** Called as each read model is promoted, before the grace period ends. */
  onPromoted?: (projection: Projection) => Promise<void>;
  /**
   * Park the streams of events it cannot fold (and their later events) in the new generation, and
   * go on; without it, a rebuild is strict: such an event stops it (PoisonEventError), and nothing changes.
   */
  park?: boolean;
  /** With `park`: called once per stream parked, with why. */
  onParked?: (projection: Projection, streamId: string, revision: number, reason: string) => void;
  /** Every rebuilt generation is live; the replaced ones are dropped after graceMs, unless the signal comes first. */
  onLive?: (results: RebuildResult[]) => void;
  /**
   * No promotion before this resolves: till then the rebuild follows the events appended meanwhile
   * (a bulk import's, folded as they come rather than read back at its end), then catches up with
   * the head and promotes.
   */
  until?: Promise<void>;
}

async function rebuild(
  projections: Projection[],
  eventStore: EventStore,
  readStore: ReadDocuments & ReadGenerations,
  options: RebuildOptions,
): Promise<RebuildResult[]> {
  const started = Date.now();
  const targets: Target[] = [];
  let head = START;
  let done = 0;
  const names = projections.map((p) => p.name).join(', ');
  const report = (swapping = false) => {
    const total = eventStore.eventsBetween(START, head);
    options.onProgress?.({ projection: names, done, total: total === null ? null : Math.max(done, total), ...(swapping ? { swapping } : {}) });
  };
  const pending = () => targets.filter((t) => !t.result);

  /** Promotes every pending target; true once none is left. */
  const promote = async (): Promise<boolean> => {
    for (const target of pending()) {
      try {
        await readStore.promote(target.projection.schema.name, target.generation);
        target.result = { projection: target.projection.name, generation: target.generation, events: done, ms: Date.now() - started };
        await options.onPromoted?.(target.projection);
      } catch (error) {
        if (!(error instanceof RebuildBehindError)) throw error;
      }
    }
    if (pending().length > 0) head = await eventStore.headPosition();
    return pending().length === 0;
  };

  try {
    for (const projection of projections) {
      await readStore.ensureCollection(projection.schema);
      await readStore.dropRetired(projection.schema.name, options.graceMs);
      const parking: Parking | undefined = options.park
        ? { streams: new Set(), onParked: (event, reason) => options.onParked?.(projection, event.streamId, event.revision, reason) }
        : undefined;
      targets.push({ projection, generation: await readStore.startRebuild(projection.schema.name), parking });
    }
    head = await eventStore.headPosition();
    const began = head;
    report();
    // Where the last batch got to; the subscription stops once it is there with nothing held, or on the signal.
    let reached = START;
    const following = new AbortController();
    const follow = () => following.abort();
    if (options.signal.aborted) follow();
    else options.signal.addEventListener('abort', follow, { once: true });
    let holding = options.until !== undefined;
    void options.until
      ?.then(async () => {
        head = await eventStore.headPosition();
        holding = false;
        // Caught up already: no batch is coming to say so.
        if (comparePositions(reached, head) >= 0) follow();
      })
      .catch(follow);
    let finished = !holding && comparePositions(head, START) <= 0 && (await promote());
    if (!finished) {
      // A rebuild of the feed's index alone opens no value.
      const values = projections.some((p) => p.readsValues);
      try {
        for await (const batch of eventStore.subscribeToAll(START, { signal: following.signal, maxBatchSize: REBUILD_BATCH, values })) {
          await inSpan(
            'rebuild batch',
            () => ({ 'rebuild.events': batch.events.length, 'rebuild.position': `${batch.position.commit}/${batch.position.prepare}` }),
            async () => {
              for (const target of pending()) await foldBatch(target.projection, readStore, target.generation, batch, began, undefined, target.parking);
            },
          );
          done += batch.events.length;
          reached = batch.position;
          // The store calls are synchronous on SQLite: let signals (Ctrl-C) and timers in between batches.
          await nextTurn();
          const caughtUp = !holding && comparePositions(batch.position, head) >= 0;
          report(caughtUp);
          if (caughtUp && (await promote())) {
            finished = true;
            break;
          }
        }
      } finally {
        options.signal.removeEventListener('abort', follow);
      }
      // Stopped following once caught up with the head after the hold.
      if (!finished && !options.signal.aborted && !holding && comparePositions(reached, head) >= 0) finished = await promote();
    }
    if (!finished) {
      const left = pending()
        .map((t) => t.projection.name)
        .join(', ');
      throw new RebuildInterruptedError(`Rebuild interrupted: the live read model of ${left} is unchanged`);
    }
  } catch (error) {
    // Stopped or failed: what was built so far is dropped now (a store that cannot be reached
    // leaves it to the next rebuild, which drops it first).
    for (const target of pending()) await readStore.abandonRebuild(target.projection.schema.name, target.generation).catch(() => undefined);
    throw error;
  }
  const results = targets.map((t) => t.result!);
  options.onLive?.(results);
  await sleep(options.graceMs, undefined, { signal: options.signal }).catch(() => undefined); // cut short by a stop
  // Interrupted here, the replaced generations are left to the next rebuild or the service's next start.
  if (!options.signal.aborted) for (const p of projections) await readStore.dropRetired(p.schema.name, options.graceMs);
  return results;
}
