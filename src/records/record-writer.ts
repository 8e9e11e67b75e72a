import type { DataKeys } from '../sealing/data-keys';
import { contended, notFound, Refusal } from '../errors';
import { AppendResult, NewEventMetadata, RecordErasedError, EventStore, Position, WrongExpectedRevisionError } from '../event-store/event-store.port';
import type { CommandContext } from './command-context';
import { currentTraceparent } from '../tracing/tracing';
import type { ProjectionsService } from '../projections/projections.service';
import { ownedRecord, RecordKind, RecordState, streamIdOf } from './record';
import { RecordSnapshots } from './record-snapshots';
import { Clock, Decision, decideAndAppend, Folded, NO_STREAM, readRecord, systemClock } from './handle-command';
import { FoldedRecords } from './folded-records';
import { RecordTurns } from './record-turns';

const MAX_ATTEMPTS = 10;

/** Metadata of every event a command appends. The access token is never part of it. */
export function eventMetadata(context: CommandContext, causationId: string): NewEventMetadata {
  const traceparent = currentTraceparent();
  return { accountId: context.accountId, correlationId: context.requestId, causationId, ...(traceparent ? { traceparent } : {}) };
}

/**
 * What an If-Match header asks of the record: that it exists ('*'), or that its current revision is
 * one of these. Absent, the write applies to whatever revision it finds.
 */
export type Precondition = '*' | number[];

/** A write's precondition (If-Match), and whether its record id was just made (a create). */
export interface WriteOptions {
  precondition?: Precondition;
  isNew?: boolean;
}

/**
 * What a write did: its append (null when the decision changed nothing), the record as the write
 * left it, to answer from (a read model may show another worker's later write by then), and the
 * position the read models must reach to show it.
 */
export interface Written {
  appended: AppendResult | null;
  record: RecordState | null;
  shownAt?: Position;
}

/**
 * The write path of one kind of record: handle-command.ts's core (read, fold, decide, append at the
 * revision read), wrapped by
 * - the folds kept between writes (folded-records.ts): the first attempt decides on what this
 *   writer knows without reading, the store's expected revision the check;
 * - a retry on the stream as read when another writer got there first, so no update is lost;
 * - a per-record turn (record-turns.ts), so that writes to one record here do not race each other;
 * - snapshots (record-snapshots.ts), taken by the write that ends each block of a record's events;
 * - the read-your-writes wait (ProjectionsService.waitFor), outside the turn, so the caller's next
 *   read shows the write.
 */
export class RecordWriter {
  private readonly folds: FoldedRecords;
  private readonly turns = new RecordTurns();
  private readonly snapshots: RecordSnapshots;
  private readonly clock: Clock;

  constructor(
    private readonly kind: RecordKind,
    private readonly eventStore: EventStore,
    private readonly projections: ProjectionsService,
    private readonly keys: DataKeys,
    options: { keepAtMost?: number; clock?: Clock } = {},
  ) {
    this.folds = new FoldedRecords(kind, options.keepAtMost);
    this.snapshots = new RecordSnapshots(eventStore);
    this.clock = options.clock ?? systemClock;
  }

  onModuleDestroy(): void {
    this.folds.close();
  }

  /** The record as its stream has it now: the fold kept, brought up to date with the events after it. */
  async load(id: string): Promise<Folded> {
    const folded = await readRecord(this.eventStore, this.kind, id, this.folds.readFrom(id));
    this.folds.keep(id, folded);
    return folded;
  }

  /** What a first attempt decides on without reading: the fold kept unless behind, no stream for an id just made. */
  known(id: string, isNew = false): Folded | undefined {
    return isNew ? NO_STREAM : this.folds.upToDate(id);
  }

  /** Runs `work` in the record's turn (record-turns.ts): for a write of several steps, such as a slug claim. */
  inTurn<T>(id: string, work: () => Promise<T>): Promise<T> {
    return this.turns.run(id, work);
  }

  /** Decides, appends, retries on a stream that moved on, and returns what the write did once the read models show it. */
  async write(id: string, context: CommandContext, causationId: string, decide: Decision, { precondition, isNew }: WriteOptions = {}): Promise<Written> {
    const checked = ifAt(this.kind, context.accountId, precondition, decide);
    const written = await this.inTurn(id, async () => {
      for (let attempt = 1; ; attempt++) {
        const guess = attempt === 1 ? this.known(id, isNew) : undefined;
        try {
          const done = await this.append(id, guess ?? (await this.load(id)), checked, context, causationId);
          // Nothing changed on a guess: it may be out of date; decided again on the stream as read.
          if (guess && !done.appended) continue;
          return done;
        } catch (error) {
          // A refusal on a guess, or a stream that moved on: decided again on the stream as read.
          if (guess && error instanceof Refusal) continue;
          if (!(error instanceof WrongExpectedRevisionError)) throw error;
          if (attempt === MAX_ATTEMPTS) throw contended(this.kind.label);
        }
      }
    });
    await this.shown(id, written);
    return written;
  }

  /**
   * One attempt: decides on `folded` and appends at its revision (handle-command.ts), keeps the
   * fold and the snapshot it ends a block with. Throws the decision's refusal (not found, where
   * the record's key is gone), or WrongExpectedRevisionError when the stream moved on since.
   */
  async append(id: string, folded: Folded, decide: Decision, context: CommandContext, causationId: string): Promise<Written> {
    const streamId = streamIdOf(this.kind, id);
    let handled;
    try {
      handled = await decideAndAppend(this.eventStore, this.kind, id, folded, decide, eventMetadata(context, causationId), this.clock);
    } catch (error) {
      throw await this.refusalOf(id, error);
    }
    const { appended, after, lastEventId } = handled;
    if (appended) {
      this.folds.keep(id, after);
      await this.snapshots.afterWrite(this.kind, streamId, after.state!, lastEventId!);
    }
    return { appended, record: after.state, shownAt: after.position };
  }

  /**
   * The refusal a write answers for `error`. The record is gone (not found) when erased between the
   * read and the append, or when refused on values that read '' because another worker destroyed
   * its key (its erasure not appended yet), whatever the decision said of its values.
   */
  async refusalOf(id: string, error: unknown): Promise<unknown> {
    if (error instanceof RecordErasedError) return notFound(this.kind.label);
    if (error instanceof Refusal && error.reason !== 'not_found' && (await this.keys.current(streamIdOf(this.kind, id))) === null) {
      return notFound(this.kind.label);
    }
    return error;
  }

  /** Read-your-writes: resolves once the read models show the write, so the caller's next read does. */
  async shown(id: string, { shownAt }: Written): Promise<void> {
    if (shownAt) await this.projections.waitFor(streamIdOf(this.kind, id), shownAt);
  }

  /**
   * The record a create answers with: as its write left it. A create that found its id taken (an
   * Idempotency-Key's retry) appended nothing and answers the record as it is now: not found once
   * deleted, erased or its key destroyed.
   */
  async created(id: string, { appended, record }: Written, accountId: string): Promise<RecordState> {
    if (appended) return record!;
    if ((await this.keys.current(streamIdOf(this.kind, id))) === null) throw notFound(this.kind.label);
    return ownedRecord(this.kind, record, accountId);
  }
}

/** The decision, once the If-Match is checked: a write on a revision it did not expect is refused, whatever it decides. */
export function ifAt(kind: RecordKind, accountId: string, precondition: Precondition | undefined, decide: Decision): Decision {
  if (!precondition) return decide;
  return (state) => {
    const record = ownedRecord(kind, state, accountId);
    if (precondition !== '*' && !precondition.includes(record.revision)) {
      throw new Refusal('precondition_failed', `The ${kind.label.toLowerCase()} has changed since: its current ETag is "${record.revision}".`);
    }
    return decide(state);
  };
}
