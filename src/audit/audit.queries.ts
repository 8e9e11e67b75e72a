import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { notFound } from '../errors';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ownedRecord, RecordKind, RecordState, streamIdOf } from '../records/record';
import { HistoryEntry, recordAsOf, recordHistory } from './record-history';

/** Audit reads come from the record's own stream in the event store, never from a read model. */

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
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  /** Deleted records keep their history; another account's record has none to show (404). */
  async execute({ kind, accountId, id, page }: RecordHistoryQuery) {
    const events = await this.eventStore.readStream(streamIdOf(kind, id));
    // A record belongs to the account that created it.
    if (events[0]?.metadata.accountId !== accountId) throw notFound(kind.label);
    const entries = recordHistory(kind, events).slice(page.offset, page.offset + page.limit);
    return { entries, total: events.length };
  }
}

@QueryHandler(RecordAsOfQuery)
export class RecordAsOfHandler implements IQueryHandler<RecordAsOfQuery, RecordState> {
  constructor(@Inject(EVENT_STORE) private readonly eventStore: EventStore) {}

  /** 404 when the record did not exist yet, was deleted by then, or is another account's. */
  async execute({ kind, accountId, id, asOf }: RecordAsOfQuery): Promise<RecordState> {
    const events = await this.eventStore.readStream(streamIdOf(kind, id));
    return ownedRecord(kind, recordAsOf(kind, events, asOf), accountId);
  }
}
