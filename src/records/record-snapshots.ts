import { Logger } from '@nestjs/common';
import { v7 as timeOrderedUuid } from 'uuid';
import { EventStore, NewEvent, StoredEvent, WrongExpectedRevisionError } from '../event-store/event-store.port';
import { snapshotStreamOf } from '../sealing/sealed-event-store';
import { evolveRecord, Fields, RecordKind, RecordState } from './record';

/** Record revisions per snapshot: the most a read folds past one before the events it shows. */
export const SNAPSHOT_EVERY = 100;

/** Events read (and their missing snapshots appended) at once by a read folding across many. */
const CATCH_UP = 50 * SNAPSHOT_EVERY;

/**
 * Snapshots of a record's fold, so that a history page or an as-of read folds at most
 * SNAPSHOT_EVERY - 1 events besides the ones it shows, however long the record's stream.
 *
 * Why snapshots: a history entry's `changes` need each field's value before it, and an as-of read
 * the whole record at a revision; both are the fold of every earlier event. Reading back only to
 * the last event that set each field is as unbounded (a field set by the create and first changed
 * at revision 20,000).
 *
 * Why kept as events: in a stream of their own per record (`snapshot-<record stream>`, outside the
 * kinds' prefixes, so no projector folds them), they work on every event store through the port,
 * SQLite and EventStoreDB alike, with no other store to run or keep in step. SealedEventStore seals
 * their values with the record's key, so an erasure leaves them as unreadable as the record's own
 * events; an erased record's history and as-of reads never use them anyway.
 *
 * Snapshot j holds the record's fields after revision (j + 1) * SNAPSHOT_EVERY - 1: found by
 * revision, without a search. They are appended in order (snapshot j at expected revision j - 1),
 * so writers and readers filling the same ones cannot store one twice. The write whose event ends a
 * block takes its snapshot (afterWrite: one append per SNAPSHOT_EVERY writes); a read that finds
 * the snapshot it wants missing (a stream written before snapshots, or a write whose snapshot
 * failed) folds on from the last there is and appends those it passes, once.
 * None is taken of a deleted record (only an erasure follows a delete): a delete at a block's end
 * is folded from the snapshot before.
 */
export class RecordSnapshots {
  private readonly logger = new Logger('RecordSnapshots');

  constructor(private readonly eventStore: EventStore) {}

  /** The record's fold up to and including `revision`; null below 0. `created` is its first event. */
  async foldUpTo(kind: RecordKind, created: StoredEvent, revision: number): Promise<RecordState | null> {
    if (revision < 0) return null;
    const { streamId } = created;
    const snapshots = snapshotStreamOf(streamId);
    const wanted = Math.floor((revision + 1) / SNAPSHOT_EVERY) - 1;
    let snapshot: StoredEvent | undefined = wanted >= 0 ? (await this.eventStore.readStream(snapshots, wanted, 1))[0] : undefined;
    let filling: boolean = wanted >= 0 && !snapshot;
    if (filling) {
      snapshot = (await this.eventStore.readLastEvent(snapshots)) ?? undefined;
      // Appended by another read since the first look: the one wanted is there now.
      if (snapshot && snapshot.revision >= wanted) {
        [snapshot] = await this.eventStore.readStream(snapshots, wanted, 1);
        filling = false;
      }
    }
    let state = snapshot ? fromSnapshot(kind, created, snapshot) : null;
    let next = snapshot ? snapshot.revision + 1 : 0;
    for (let from = next * SNAPSHOT_EVERY; from <= revision;) {
      const events = await this.eventStore.readStream(streamId, from, Math.min(CATCH_UP, revision - from + 1));
      if (events.length === 0) break;
      const taken: NewEvent[] = [];
      for (let i = 0; i < events.length; i++) {
        const event = events[i];
        state = evolveRecord(kind, state, event);
        if (state.deleted) filling = false;
        // The last event of its revision: a stored event an upcaster made several share one.
        const endsRevision = i === events.length - 1 || events[i + 1].revision !== event.revision;
        if (filling && endsRevision && (event.revision + 1) % SNAPSHOT_EVERY === 0) taken.push(snapshotEvent(kind, state, event.id));
      }
      if (taken.length > 0) {
        filling = await this.append(snapshots, taken, next);
        next += taken.length;
      }
      // By revision, not by count: events read are upcast, one stored event may read as several or none.
      from = events[events.length - 1].revision + 1;
    }
    return state;
  }

  /**
   * After a write: when its last event ends a block, the snapshot of `state` (the record as the
   * write left it), if the block before has its own; otherwise reads fill the gap.
   */
  async afterWrite(kind: RecordKind, streamId: string, state: RecordState, lastEventId: string): Promise<void> {
    if (state.deleted || (state.revision + 1) % SNAPSHOT_EVERY !== 0) return;
    const block = (state.revision + 1) / SNAPSHOT_EVERY - 1;
    await this.append(snapshotStreamOf(streamId), [snapshotEvent(kind, state, lastEventId)], block);
  }

  /** Whether the snapshots were appended. They are a cache: a read answers without them. */
  private async append(snapshots: string, events: NewEvent[], first: number): Promise<boolean> {
    try {
      await this.eventStore.appendToStream(snapshots, events, first === 0 ? 'no_stream' : first - 1);
      return true;
    } catch (error) {
      // Another read or write appended them first; anything else (the store, or an erasure under way) leaves them to a later read.
      if (!(error instanceof WrongExpectedRevisionError)) this.logger.warn(`Snapshots of ${snapshots} not appended: ${(error as Error).message}`);
      return false;
    }
  }
}

function snapshotEvent(kind: RecordKind, state: RecordState, afterEventId: string): NewEvent {
  return {
    id: timeOrderedUuid(),
    type: `${kind.label}Snapshot`,
    data: { ...state.fields },
    // Caused by the event whose fold it holds.
    metadata: { accountId: state.accountId, correlationId: afterEventId, causationId: afterEventId },
  };
}

/** The record as a snapshot holds it: what is not a field comes from its first event. */
function fromSnapshot(kind: RecordKind, created: StoredEvent, snapshot: StoredEvent): RecordState {
  const base = evolveRecord(kind, null, created);
  return { ...base, revision: (snapshot.revision + 1) * SNAPSHOT_EVERY - 1, fields: { ...(snapshot.data as Fields) } };
}
