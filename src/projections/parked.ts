import { comparePositions, type EventStore, type Position, type StoredEvent } from '../event-store/event-store.port';
import { boundedError } from '../read-store/generation-rules';
import type { ParkedChanges, ParkedEvent, ParkedStream, ReadDocument, ReadDocuments, ReadGenerations, SkippedEvent } from '../read-store/read-store.port';
import type { Projection } from './projection';

/**
 * Parked streams, as a fold sees them (see foldBatch): the streams of the generation that are
 * parked (loaded when a projector starts folding a generation, kept up to date by its own batches
 * and settlements: it is their only writer), how many events they hold, and what to tell of a
 * stream a batch parks. Per batch it costs a lookup per event in this set: O(batch).
 */
export interface Parking {
  streams: Set<string>;
  /** Called once per stream a batch parks, with why. */
  onParked?: (event: StoredEvent, reason: string) => void;
}

/** An event as a parked stream keeps it. */
export function parkedEventOf(event: StoredEvent, error: string): ParkedEvent & { streamId: string } {
  return { streamId: event.streamId, revision: event.revision, position: event.position, type: event.type, error: boundedError(error) };
}

export const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** What a settlement did to one stream: every event folded (unparked), or parked at a later event, or again at the same one. */
export interface Settled {
  streamId: string;
  action: 'retry' | 'skip';
  outcome: 'unparked' | 'parked';
  /** Where it is parked now, when it still is. */
  now: ParkedStream | null;
  skipped: SkippedEvent | null;
}

/**
 * Carries out the requests set on the generation's parked streams (see ReadGenerations.requestParked):
 * for each, in order, a retry folds the stream's parked events again, from its first; a skip drops
 * the first for good (recorded: who, when, why) and folds the rest. Only the events up to `position`
 * (the fold's checkpoint) are parked ones; later ones come through the subscription. Every event
 * folded: the stream is unparked. One that still fails: the stream stays parked, at it. Each stream's
 * documents and new state go in one commit, with the checkpoint as it is. The caller makes sure
 * nothing else writes the generation meanwhile (the projector runs this between its batches, under
 * the lease; the CLI only when it holds the lease itself).
 */
export async function settleParked(
  projection: Projection,
  eventStore: EventStore,
  readStore: ReadDocuments & ReadGenerations,
  generation: number,
  position: Position,
  /** Told of each stream as its commit is done: a later one failing leaves the earlier ones settled. */
  onSettled?: (settled: Settled) => void,
  now = Date.now(),
): Promise<Settled[]> {
  const collection = projection.schema.name;
  const asked = (await readStore.parked(collection, generation)).filter((s) => s.request);
  const settled: Settled[] = [];
  for (const stream of asked) {
    const request = stream.request!;
    const skipped: SkippedEvent | null =
      request.action === 'skip' ? { ...stream.first, streamId: stream.streamId, by: request.by, at: now, reason: request.reason ?? '' } : null;
    const from = stream.first.revision + (skipped ? 1 : 0);
    const events = (await eventStore.readStream(stream.streamId, from)).filter((e) => comparePositions(e.position, position) <= 0);
    const ids = [...new Set(events.map((e) => projection.documentIdOf(e)))];
    const documents = projection.documents === 'event' ? new Map<string, ReadDocument>() : await readStore.getMany(collection, ids, generation);
    const changed = new Map<string, ReadDocument>();
    let still: ParkedStream | null = null;
    for (const [i, event] of events.entries()) {
      const id = projection.documentIdOf(event);
      const current = projection.documents === 'event' ? null : (documents.get(id) ?? null);
      if (current && event.revision <= current.revision) continue;
      try {
        const next = projection.evolve(current, event);
        documents.set(id, next);
        changed.set(id, next);
      } catch (error) {
        const { streamId: _, ...first } = parkedEventOf(event, reasonOf(error));
        still = {
          streamId: stream.streamId,
          first,
          parkedAt: now,
          waiting: events.length - i - 1,
          lastRevision: events[events.length - 1].revision,
          request: null,
        };
        break;
      }
    }
    // Nothing folded past a stream that is still parked: what it folded before the failing event stands, as a batch's would.
    const changes: ParkedChanges = { settled: [{ streamId: stream.streamId, now: still }], ...(skipped ? { skipped: [skipped] } : {}) };
    await readStore.commit(collection, [...changed.values()], { generation, position }, changes);
    const done: Settled = { streamId: stream.streamId, action: request.action, outcome: still ? 'parked' : 'unparked', now: still, skipped };
    settled.push(done);
    onSettled?.(done);
  }
  return settled;
}
