import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { notFound } from '../errors';
import { EVENT_STORE, EventStore, type StoredEvent } from '../event-store/event-store.port';
import { ownedRecord, RecordKind, RecordState, streamIdOf } from '../records/record';
import { HistoryEntry, recordHistory, revisionAsOf } from './record-history';
import { RecordSnapshots } from '../records/record-snapshots';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';

/**
 * Audit reads come from the record's own stream in the event store, never from a read model. Each
 * reads what it shows and a bounded number of events more, however long the stream: its first
 * event (whose account owns the record), its last (the count, and whether it was erased: read
 * before anything is shown, so a read that starts after an erasure shows no value), a snapshot
 * and the events after it (RecordSnapshots), and for an as-of read a binary search by time.
 *
 * Erased is also a record whose key is destroyed before its erasure event is in its stream: an
 * erasure under way or cut short (finished by the next start), or events restored from before it.
 */

export class RecordHistoryQuery extends Query<{ entries: HistoryEntry[]; total: number }> {
  constructor(
    readonly kind: RecordKind,
    readonly accountId: string,
    readonly id: string,
    readonly page: { offset: number; limit: number },
  ) {
    super();
  }
}

export class RecordAsOfQuery extends Query<RecordState> {
  constructor(
    readonly kind: RecordKind,
    readonly accountId: string,
    readonly id: string,
    /** Epoch seconds. */
    readonly asOf: number,
  ) {
    super();
  }
}

@QueryHandler(RecordHistoryQuery)
export class RecordHistoryHandler implements IQueryHandler<RecordHistoryQuery, { entries: HistoryEntry[]; total: number }> {
  private readonly snapshots: RecordSnapshots;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {
    this.snapshots = new RecordSnapshots(eventStore);
  }

  /** Deleted records keep their history; another account's record has none to show (404). */
  async execute({ kind, accountId, id, page }: RecordHistoryQuery) {
    const streamId = streamIdOf(kind, id);
    const [created] = await this.eventStore.readStream(streamId, 0, 1);
    // A record belongs to the account that created it.
    if (created?.metadata.accountId !== accountId) throw notFound(kind.label);
    const { last, erased } = await lastAndErased(this.eventStore, this.keys, kind, streamId, created);
    const total = last.revision + 1;
    // Up to the last event read: events appended meanwhile are not counted in the total either.
    const events = page.offset < total ? await this.eventStore.readStream(streamId, page.offset, Math.min(page.limit, total - page.offset)) : [];
    const before = erased || events.length === 0 ? null : await this.snapshots.foldUpTo(kind, created, page.offset - 1);
    return { entries: recordHistory(kind, events, before, erased), total };
  }
}

@QueryHandler(RecordAsOfQuery)
export class RecordAsOfHandler implements IQueryHandler<RecordAsOfQuery, RecordState> {
  private readonly snapshots: RecordSnapshots;

  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {
    this.snapshots = new RecordSnapshots(eventStore);
  }

  /**
   * 404 when the record did not exist yet, was deleted by then, or is another account's; and once
   * erased: an erased record does not exist at any time.
   */
  async execute({ kind, accountId, id, asOf }: RecordAsOfQuery): Promise<RecordState> {
    const streamId = streamIdOf(kind, id);
    const [created] = await this.eventStore.readStream(streamId, 0, 1);
    if (created?.metadata.accountId !== accountId) throw notFound(kind.label);
    const { last, erased } = await lastAndErased(this.eventStore, this.keys, kind, streamId, created);
    if (erased) throw notFound(kind.label);
    const revision = await revisionAsOf(asOf, created, last, async (r) => (await this.eventStore.readStream(streamId, r, 1))[0]);
    return ownedRecord(kind, await this.snapshots.foldUpTo(kind, created, revision), accountId);
  }
}

/** The stream's last event, and whether the record is erased: by its erasure event, or its key destroyed (read side by side). */
async function lastAndErased(eventStore: EventStore, keys: DataKeys, kind: RecordKind, streamId: string, created: StoredEvent) {
  const [last, destroyed] = await Promise.all([eventStore.readLastEvent(streamId), keys.destroyedAmong([streamId])]);
  const known = last ?? created;
  return { last: known, erased: known.type === kind.events.erased || destroyed.size > 0 };
}
