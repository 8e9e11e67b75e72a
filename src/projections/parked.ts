import type { Logger } from '@nestjs/common';
import { comparePositions, type EventStore, type Position, type StoredEvent, UnreadableEventError } from '../event-store/event-store.port';
import { MissingKeysError } from '../sealing/sealed-event-store';
import { boundedError } from '../read-store/generation-rules';
import type {
  ParkedChanges,
  ParkedEvent,
  ParkedStream,
  ReadDocument,
  ReadDocuments,
  ReadGenerations,
  ReadLeases,
  SkippedEvent,
} from '../read-store/read-store.port';
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
 * the lease; the CLI only when it holds the lease itself): the lease, renewed before each stream's
 * commit, stops the settlement once another holder has it, and the commit is refused if the stream
 * was parked further since it was read (see ParkedChanges.settled).
 */
export async function settleParked(
  projection: Projection,
  eventStore: EventStore,
  readStore: ReadDocuments & ReadGenerations & ReadLeases,
  generation: number,
  position: Position,
  lease: { holder: string; ttlMs: number },
  /** Told of each stream as its commit is done: a later one failing leaves the earlier ones settled. */
  onSettled?: (settled: Settled) => void,
  now = Date.now(),
): Promise<Settled[]> {
  const collection = projection.schema.name;
  const asked = (await readStore.parked(collection, generation)).filter((s) => s.request);
  const settled: Settled[] = [];
  const holdLease = async () => {
    const holder = await readStore.acquireLease(collection, lease.holder, lease.ttlMs);
    if (holder !== lease.holder)
      throw new Error(`the lease of ${projection.name} went to ${holder} while its parked streams were settled: that instance settles them now`);
  };
  for (const stream of asked) {
    const request = stream.request!;
    const skipped: SkippedEvent | null =
      request.action === 'skip' ? { ...stream.first, streamId: stream.streamId, by: request.by, at: now, reason: request.reason ?? '' } : null;
    const from = stream.first.revision + (skipped ? 1 : 0);
    let events: StoredEvent[];
    try {
      events = (await eventStore.readStream(stream.streamId, from)).filter((e) => comparePositions(e.position, position) <= 0);
    } catch (error) {
      // Its events cannot be read still (an event of a newer version, a key lost): it stays parked where it is, saying why.
      if (!(error instanceof UnreadableEventError || error instanceof MissingKeysError)) throw error;
      const now: ParkedStream = { ...stream, first: { ...stream.first, error: boundedError(error.message) }, request: null };
      await holdLease();
      await readStore.commit(collection, [], { generation, position }, { settled: [{ streamId: stream.streamId, now, seen: stream }] });
      const done: Settled = { streamId: stream.streamId, action: request.action, outcome: 'parked', now, skipped: null };
      settled.push(done);
      onSettled?.(done);
      continue;
    }
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
    const changes: ParkedChanges = { settled: [{ streamId: stream.streamId, now: still, seen: stream }], ...(skipped ? { skipped: [skipped] } : {}) };
    await holdLease();
    await readStore.commit(collection, [...changed.values()], { generation, position }, changes);
    const done: Settled = { streamId: stream.streamId, action: request.action, outcome: still ? 'parked' : 'unparked', now: still, skipped };
    settled.push(done);
    onSettled?.(done);
  }
  return settled;
}

/**
 * A projector's parked streams (with POISON_EVENTS=park): those of the generation it folds, loaded
 * as it starts folding it (or a rebuild replaces it), then kept by its own batches and settlements,
 * since the lease holder is the only writer of a generation's parked streams. The CLI's requests
 * move a stamp in the store, which the projector reads every PARKED_POLL_MS (settle).
 */
export class ParkedStreams {
  private parking?: Parking;
  private parkingOf = -1;
  /** The parked events already told in the log (see load). */
  private readonly told = new Set<string>();
  private requestStamp = 0;

  constructor(
    private readonly projection: Projection,
    private readonly eventStore: EventStore,
    private readonly readStore: ReadDocuments & ReadGenerations & ReadLeases,
    private readonly logger: Logger,
    private readonly mode: 'park' | 'stop',
    /** The lease the projector folds under: settlements hold it too. */
    private readonly lease: { holder: string; ttlMs: number },
  ) {}

  /**
   * Settles the CLI's requests (`settle`) every PARKED_POLL_MS while `signal` holds, one at a time.
   * Returns what ends the polling, once a settlement under way is done.
   */
  pollRequests(signal: AbortSignal, settle: () => Promise<void>): () => Promise<void> {
    if (this.mode !== 'park') return async () => undefined;
    let checking: Promise<unknown> = Promise.resolve();
    let busy = false;
    const poll = setInterval(() => {
      if (busy || signal.aborted) return;
      busy = true;
      checking = settle()
        .catch((error) => this.logger.warn(`Could not settle the requests on parked streams: ${(error as Error).message}`))
        .finally(() => (busy = false));
    }, PARKED_POLL_MS);
    return async () => {
      clearInterval(poll);
      await checking;
    };
  }

  /** What a batch folds with: the parked streams, none when poison events stop the projector. */
  current(): Parking | undefined {
    return this.parking;
  }

  /** The streams parked in `generation`, read again from the store. */
  async load(generation: number): Promise<void> {
    if (this.mode !== 'park') return;
    const name = this.projection.schema.name;
    const stamp = await this.readStore.parkedRequests(name, generation);
    const streams = await this.readStore.parked(name, generation);
    this.parking = {
      streams: new Set(streams.map((s) => s.streamId)),
      onParked: (event, reason) => {
        // Once: a batch whose commit failed is folded again, and parks the same event again.
        const key = `${generation}/${event.streamId}@${event.revision}`;
        if (this.told.has(key)) return;
        if (this.told.size >= TOLD_KEPT) this.told.clear();
        this.told.add(key);
        this.logger.warn(`Parked ${event.streamId}@${event.revision} (${event.type}) and the events after it in its stream: ${reason}`);
      },
    };
    this.parkingOf = generation;
    // Requests made while no instance folded are settled at the next poll.
    this.requestStamp = streams.some((s) => s.request) ? -1 : stamp;
  }

  /**
   * The CLI's retry and skip requests (see src/cli/parked.ts): when the generation's request stamp
   * has moved, each stream asked is settled (settleParked) in the fold's turn (`inTurn`), up to
   * `position()`, the fold's checkpoint as that turn finds it, and the parked set follows.
   * `onSettled`: documents were written outside the fold's batches.
   */
  async settle(generation: number, position: () => Position, inTurn: <T>(work: () => Promise<T>) => Promise<T>, onSettled: () => void): Promise<void> {
    const name = this.projection.schema.name;
    if (!this.parking || this.parkingOf !== generation) return;
    const stamp = await this.readStore.parkedRequests(name, generation);
    if (stamp === this.requestStamp) return;
    await inTurn(async () => {
      if (this.parkingOf !== generation) return;
      // Taken as seen only once settled: a store that failed it leaves the requests for the next poll.
      let settledAny = false;
      try {
        await settleParked(this.projection, this.eventStore, this.readStore, generation, position(), this.lease, (s) => {
          settledAny = true;
          if (s.outcome === 'unparked') this.parking!.streams.delete(s.streamId);
          if (s.skipped) this.logger.warn(`Skipped ${s.streamId}@${s.skipped.revision} (${s.skipped.type}) for good, by ${s.skipped.by}: ${s.skipped.reason}`);
          this.logger.log(
            s.outcome === 'unparked'
              ? `Unparked ${s.streamId} after a ${s.action}: its parked events are folded`
              : `${s.streamId} stays parked after a ${s.action}, at ${s.now!.first.revision}: ${s.now!.first.error}`,
          );
        });
        this.requestStamp = stamp;
      } catch (error) {
        // A commit whose outcome is unknown may have settled a stream: the parked streams as the store holds them.
        await this.load(generation).catch(() => undefined);
        throw error;
      } finally {
        if (settledAny) onSettled();
      }
    });
  }
}

/** How often the folder reads the generation's request stamp (see ParkedStreams.settle): one small read. */
export const PARKED_POLL_MS = 250;

/** Parked events told in the log, remembered at most. */
const TOLD_KEPT = 10_000;
