import { LRUCache } from 'lru-cache';
import { v7 as timeOrderedUuid } from 'uuid';
import type { DataKeys } from '../sealing/data-keys';
import { ApiError, notFound } from '../errors';
import {
  AppendResult,
  DomainEvent,
  NewEventMetadata,
  RecordErasedError,
  EventStore,
  NewEvent,
  Position,
  WrongExpectedRevisionError,
} from '../event-store/event-store.port';
import type { CommandContext } from './command-context';
import { siblings } from '../instance';
import { currentTraceparent } from '../tracing/tracing';
import type { ProjectionsService } from '../projections/projections.service';
import { evolveRecord, ownedRecord, RecordKind, RecordState, recordIdOf, streamIdOf } from './record';
import { RecordSnapshots } from './record-snapshots';

const MAX_ATTEMPTS = 10;

/** Metadata of every event a command appends. The access token is never part of it. */
export function eventMetadata(context: CommandContext, causationId: string): NewEventMetadata {
  const traceparent = currentTraceparent();
  return { accountId: context.accountId, correlationId: context.requestId, causationId, ...(traceparent ? { traceparent } : {}) };
}

/**
 * Event ids are UUIDs v7, ordered by time: the embedded store's unique index on them then grows at
 * its end, where a random id (v4) dirtied an index page of its own per event in each commit. Record
 * ids stay v4, as the contract says.
 */
export function withMetadata(events: DomainEvent[], metadata: NewEventMetadata) {
  return events.map((e) => ({ id: timeOrderedUuid(), type: e.type, data: e.data, metadata }));
}

/**
 * Decides on the record as read: a decider's `decide` with its command. Synchronous, as it may run
 * more than once (see decideAndAppend); work that must come before the append (a profile's slug
 * reservation) is a step of the handler before the write, with decideAhead.
 */
export type Decision<Event extends DomainEvent = DomainEvent> = (state: RecordState | null) => Event[];

/**
 * What an If-Match header asks of the record: that it exists ('*'), or that its current revision is
 * one of these. Absent, the write applies to whatever revision it finds.
 */
export type Precondition = '*' | number[];

/** A write's precondition (If-Match), and whether its record id was just made (a create). */
interface WriteOptions {
  precondition?: Precondition;
  isNew?: boolean;
}

/**
 * What a write did: its append (null when the decision changed nothing), and the record as the
 * write left it, to answer from: a read model may show another worker's later write by then.
 * null after an append that created the record where the store's answer does not say the time it
 * recorded, which the new record's fold holds (see RecordWriter.created).
 */
export interface Written {
  appended: AppendResult | null;
  record: RecordState | null;
}

/** Folded records a writer keeps between writes, least recently used dropped first. */
const FOLDED_RECORDS_KEPT = 10_000;

/** A record as its stream has it up to `revision`, the last event's `position`. */
interface Folded {
  state: RecordState;
  revision: number;
  position: Position;
  /** Another worker has appended to the stream since (its news): the next write reads the events after this fold first. */
  behind?: true;
}

const noop = () => undefined;

/** A record with no events yet. */
const NO_STREAM = { state: null, revision: 'no_stream', position: undefined } as const;

/**
 * The write path of one record: decide on the record as this writer knows it (kept from earlier
 * writes, or read from its stream), append at that revision. When another writer got there first,
 * the append is refused and the whole thing runs again on the stream as read, so no update is lost.
 * Writes to one record in this process take turns to decide and append, so that other writers are
 * other processes. Then each waits for the read models, so the caller's next read sees the write.
 *
 * Records folded before are kept, and a load reads only the events after them: a write costs the
 * same for a record with a long history as for a new one. Events are never changed or removed, so a
 * kept fold plus the events after it is the fold of the whole stream, whoever appended them. That
 * keeps the cache right beside other instances (WORKERS, or other services on the same stores):
 * their appends are read as the stream's tail, and an append racing one of theirs is refused by
 * the expected revision and decided again. Other workers of this service (WORKERS) say which streams
 * they appended to, and a fold kept of one of them is read up to date before the next write decides
 * on it, rather than refused once and decided again.
 */
export class RecordWriter {
  private readonly folded: LRUCache<string, Folded>;
  /** Taken by the write that ends each block of a record's events, so that reads seldom fold far. */
  private readonly snapshots: RecordSnapshots;
  /** By record id: the last write asked for here, settled once it has decided and appended (see oneAtATime). */
  private readonly underWay = new Map<string, Promise<void>>();
  private readonly streamPrefix: string;
  private readonly unhear: () => void;

  constructor(
    private readonly kind: RecordKind,
    private readonly eventStore: EventStore,
    private readonly projections: ProjectionsService,
    private readonly keys: DataKeys,
    keepAtMost = FOLDED_RECORDS_KEPT,
  ) {
    this.folded = new LRUCache({ max: keepAtMost });
    this.snapshots = new RecordSnapshots(eventStore);
    this.streamPrefix = streamIdOf(kind, '');
    this.unhear = siblings.hear('appended', (streams) => this.markBehind(streams));
  }

  onModuleDestroy(): void {
    this.unhear();
  }

  async load(id: string): Promise<Folded | typeof NO_STREAM> {
    const kept = this.folded.get(id);
    // Before the read: news of an append heard while it runs marks the fold behind again.
    if (kept) delete kept.behind;
    const events = await this.eventStore.readStream(streamIdOf(this.kind, id), kept ? kept.revision + 1 : 0);
    let state = kept?.state ?? null;
    for (const event of events) state = evolveRecord(this.kind, state, event);
    const last = events[events.length - 1];
    const folded = last ? { state: state!, revision: last.revision, position: last.position } : kept;
    if (!folded) return NO_STREAM;
    this.keep(id, folded);
    return folded;
  }

  /** Returns what the write did once the read models show it. */
  async write(id: string, context: CommandContext, causationId: string, decide: Decision, options: WriteOptions = {}): Promise<Written> {
    const { written, shownAt } = await this.oneAtATime(id, () => this.decideAndAppend(id, context, causationId, decide, options));
    // Outside the queue: the next write to the record decides on the fold kept here, not on the read models.
    if (shownAt) await this.projections.waitFor(streamIdOf(this.kind, id), shownAt);
    return written;
  }

  /**
   * The record a create answers with, as a read right after it shows it: the fold its write kept, or
   * the stream read back where the store's answer did not say when it recorded the event
   * (EventStoreDB's). A create that found its id taken (an Idempotency-Key's retry) appended nothing
   * and answers the record as it is now: not found once deleted, erased or its key destroyed.
   */
  async created(id: string, { appended, record }: Written, accountId: string): Promise<RecordState> {
    const state = record ?? (await this.load(id)).state;
    if (!state)
      throw new ApiError('UNAVAILABLE', `The ${this.kind.label.toLowerCase()} was saved, but cannot be read back yet. Read it again shortly.`, undefined, 1);
    if (appended) return state;
    if ((await this.keys.current(streamIdOf(this.kind, id))) === null) throw notFound(this.kind.label);
    return ownedRecord(this.kind, state, accountId);
  }

  /**
   * What a write would decide now, appending nothing: for a step that must come before its append.
   * Decided as the write's first attempt is, on what this writer knows (`guessed`: the fold it
   * kept, or no stream for a create), or with `fresh` on the stream as read. A refusal decides no
   * events here: the write decides again and answers it.
   */
  async decideAhead<Event extends DomainEvent>(
    id: string,
    context: CommandContext,
    decide: Decision<Event>,
    { precondition, isNew = false, fresh = false }: WriteOptions & { fresh?: boolean },
  ): Promise<{ state: RecordState | null; events: Event[]; guessed: boolean }> {
    const guess = fresh ? undefined : isNew ? NO_STREAM : this.upToDate(id);
    const { state } = guess ?? (await this.load(id));
    try {
      return { state, events: this.decideOn(state, context, decide, precondition), guessed: !!guess };
    } catch (error) {
      if (error instanceof ApiError) return { state, events: [], guessed: !!guess };
      throw error;
    }
  }

  /**
   * What the write did, and the position the read models must reach to show it. A precondition is checked on every attempt, so a writer that
   * lost a race to another one answers 412, not a silent retry.
   *
   * The first attempt decides on what this writer knows without reading: the fold it kept, or for a
   * create (`isNew`, an id just made) no stream. The append's expected revision is the check: if
   * others have written since, it is refused and the next attempt reads the stream. A refusal or a
   * no-change decision on that first guess may be one of an outdated state, so it is decided again
   * on the stream as read before it is answered.
   */
  private async decideAndAppend(
    id: string,
    context: CommandContext,
    causationId: string,
    decide: Decision,
    { precondition, isNew = false }: WriteOptions,
  ): Promise<{ written: Written; shownAt?: Position }> {
    for (let attempt = 1; ; attempt++) {
      const guess = attempt === 1 ? (isNew ? NO_STREAM : this.upToDate(id)) : undefined;
      const { state, revision, position } = guess ?? (await this.load(id));
      let events: DomainEvent[];
      try {
        events = this.decideOn(state, context, decide, precondition);
      } catch (error) {
        if (guess && error instanceof ApiError) continue;
        // Refused on values that read '' because another worker destroyed the key (its erasure not
        // appended yet): the record is gone, whatever this decision said of its values.
        if (error instanceof ApiError && state && (await this.keys.current(streamIdOf(this.kind, id))) === null) throw notFound(this.kind.label);
        throw error;
      }
      if (events.length === 0) {
        if (guess) continue;
        // Nothing to append, but the next read must show this state.
        return { written: { appended: null, record: state }, shownAt: position };
      }
      try {
        const streamId = streamIdOf(this.kind, id);
        const appended = withMetadata(events, eventMetadata(context, causationId));
        const written = await this.eventStore.appendToStream(streamId, appended, revision);
        // A new record's fold holds the time the store recorded (its `created`): left to `created` where the store's answer does not say it.
        const record = state || written.recordedAt ? this.keepAppended(id, state, streamId, appended, written) : null;
        if (record) await this.snapshots.afterWrite(this.kind, streamId, record, appended[appended.length - 1].id);
        return { written: { appended: written, record }, shownAt: written.position };
      } catch (error) {
        // Erased between the read and the append: its key is gone, and so is the record.
        if (error instanceof RecordErasedError) throw notFound(this.kind.label);
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt === MAX_ATTEMPTS) {
          throw new ApiError('CONFLICT', `The ${this.kind.label.toLowerCase()} is being changed by others right now; try again.`);
        }
      }
    }
  }

  /**
   * Runs `work` once the writes to this record asked for before it here have decided and appended:
   * writes to one record in this process do not race each other for the same revision (one of them
   * refused, read again and decided again), and only other processes' appends can refuse one.
   */
  private oneAtATime<T>(id: string, work: () => Promise<T>): Promise<T> {
    const before = this.underWay.get(id);
    const mine = before ? before.then(work) : work();
    const settled = mine.then(noop, noop);
    this.underWay.set(id, settled);
    void settled.then(() => {
      if (this.underWay.get(id) === settled) this.underWay.delete(id);
    });
    return mine;
  }

  /**
   * Keeps the record as this write left it, so the next write to it needs no read, and returns it.
   * The time is the store's where it says it; else now, which only a create's fold would keep (as
   * `created`): a create without the store's time is read back instead (see created).
   */
  private keepAppended(id: string, state: RecordState | null, streamId: string, appended: NewEvent[], written: AppendResult): RecordState {
    const first = written.revision - appended.length + 1;
    const recordedAt = written.recordedAt ?? new Date();
    // Each event written out, not `{ ...event, streamId, ... }`: on Node 20 a spread followed by new
    // keys takes V8's slow path, paid for every key added, on every update.
    const { position } = written;
    const folded = appended.reduce(
      (current, { id, type, data, metadata }, i) =>
        evolveRecord(this.kind, current, { id, type, data, metadata, streamId, revision: first + i, position, recordedAt }),
      state,
    )!;
    this.keep(id, { state: folded, revision: written.revision, position });
    return folded;
  }

  /** The If-Match is checked before the decision: a write on a revision it did not expect answers 412, whatever it decides. */
  private decideOn<Event extends DomainEvent>(
    state: RecordState | null,
    context: CommandContext,
    decide: Decision<Event>,
    precondition?: Precondition,
  ): Event[] {
    if (precondition) this.checkPrecondition(ownedRecord(this.kind, state, context.accountId), precondition);
    return decide(state);
  }

  private checkPrecondition(record: RecordState, precondition: Precondition): void {
    if (precondition === '*' || precondition.includes(record.revision)) return;
    throw new ApiError('PRECONDITION_FAILED', `The ${this.kind.label.toLowerCase()} has changed since: its current ETag is "${record.revision}".`);
  }

  /** The fold kept of the record, unless another worker has appended to it since. */
  private upToDate(id: string): Folded | undefined {
    const kept = this.folded.get(id);
    return kept?.behind ? undefined : kept;
  }

  private markBehind(streams: string[]): void {
    for (const streamId of streams) {
      if (!streamId.startsWith(this.streamPrefix)) continue;
      const kept = this.folded.peek(recordIdOf(this.kind, streamId));
      if (kept) kept.behind = true;
    }
  }

  private keep(id: string, folded: Folded): void {
    const kept = this.folded.peek(id);
    // A slower concurrent load may bring an older fold: keep the newer.
    if (kept && kept.revision > folded.revision) return;
    this.folded.set(id, folded);
  }
}
