import { UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { randomUUID } from 'node:crypto';
import { RecordAsOfHandler, RecordAsOfQuery, RecordHistoryHandler, RecordHistoryQuery } from '../../src/audit/audit.queries';
import { recordHistory } from '../../src/audit/record-history';
import { SNAPSHOT_EVERY } from '../../src/records/record-snapshots';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { DataKeys } from '../../src/sealing/data-keys';
import { SealedEventStore } from '../../src/sealing/sealed-event-store';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import type {
  AppendOutcome,
  AppendResult,
  EventBatch,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  StoredEvent,
  StreamAppend,
  SubscribeOptions,
} from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { evolveRecord, RecordState, streamIdOf } from '../../src/records/record';
import { snapshotStreamOf } from '../../src/sealing/sealed-event-store';
import { RECORD_KINDS } from '../../src/read-models';
import { openTempSqlite } from '../support/temp-sqlite';

/**
 * History and as-of reads cost what they show, not the record's age (issue 36, item 2): counted as
 * the events the event store hands back (a record's and its snapshots'), under the sealed store,
 * so the key checks' reads count too.
 */

/** Counts the events each read returns, around any adapter. */
class CountingEventStore implements EventStore {
  eventsRead = 0;
  constructor(private readonly store: EventStore) {}
  appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    return this.store.appendToStream(streamId, events, expected);
  }
  appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]> {
    return this.store.appendToStreams(appends);
  }
  async readStream(streamId: string, fromRevision?: number, maxCount?: number): Promise<StoredEvent[]> {
    const events = await this.store.readStream(streamId, fromRevision, maxCount);
    this.eventsRead += events.length;
    return events;
  }
  async readLastEvent(streamId: string): Promise<StoredEvent | null> {
    const last = await this.store.readLastEvent(streamId);
    if (last) this.eventsRead += 1;
    return last;
  }
  headPosition(): Promise<Position> {
    return this.store.headPosition();
  }
  eventsBetween(from: Position, to: Position): number | null {
    return this.store.eventsBetween(from, to);
  }
  subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    return this.store.subscribeToAll(from, options);
  }
  close(): Promise<void> {
    return this.store.close();
  }
}

const ACCOUNT = 'acc-1';
const T0 = 1_700_000_000; // epoch seconds of the first append
const metadata = { accountId: ACCOUNT, correlationId: 'r', causationId: 'c', schemaVersion: 2 };
const newEvent = (type: string, data: Record<string, unknown>): NewEvent => ({ id: randomUUID(), type, data, metadata });

/** Update n's values: each one changes the name, every 7th the e-mail too. */
const update = (n: number) => newEvent('CustomerUpdated', n % 7 === 0 ? { name: `Ada ${n}`, email: `ada${n}@x.io` } : { name: `Ada ${n}` });

function openStores() {
  const eventsDb = openTempSqlite();
  const keysDb = openTempSqlite();
  const inner = new SqliteEventStore(eventsDb.db);
  const counted = new CountingEventStore(inner);
  const keys = new DataKeys(new SqliteKeyStore(keysDb.db));
  const store = new UpcastingEventStore(new SealedEventStore(counted, keys, RECORD_KINDS), RECORD_KINDS);
  return {
    inner,
    counted,
    keys,
    store,
    async dispose() {
      await store.close();
      eventsDb.dispose();
      keysDb.dispose();
    },
  };
}

/**
 * A customer with `count` events appended through the port, `perSecond` to an append, each append
 * stamped one second after the one before (from T0).
 */
async function longRecord(store: EventStore, count: number, perSecond: number, last?: NewEvent): Promise<string> {
  const id = randomUUID();
  const events = [newEvent('CustomerCreated', { name: 'Ada', email: 'ada@x.io', company: 'Acme' })];
  for (let n = 1; n < count; n++) events.push(update(n));
  if (last) events[count - 1] = last;
  const clock = jest.spyOn(Date, 'now');
  try {
    for (let i = 0; i < count; i += perSecond) {
      clock.mockReturnValue((T0 + i / perSecond) * 1000);
      await store.appendToStream(streamIdOf(CUSTOMER, id), events.slice(i, i + perSecond), i === 0 ? 'no_stream' : i - 1);
    }
  } finally {
    clock.mockRestore();
  }
  return id;
}

describe('history and as-of reads of a 20,000-event record', () => {
  const COUNT = 20_000;
  const PER_SECOND = 100;
  let stores: ReturnType<typeof openStores>;
  let id: string;
  /** Every event of the record, opened: what the answers are checked against. */
  let all: StoredEvent[];
  let history: RecordHistoryHandler;
  let asOf: RecordAsOfHandler;

  beforeAll(async () => {
    stores = openStores();
    id = await longRecord(stores.store, COUNT, PER_SECOND);
    all = await stores.store.readStream(streamIdOf(CUSTOMER, id));
    history = new RecordHistoryHandler(stores.store, stores.keys);
    asOf = new RecordAsOfHandler(stores.store, stores.keys);
  }, 60_000);
  afterAll(() => stores?.dispose());

  /** The answer and the events read for it. */
  async function counted<T>(read: () => Promise<T>): Promise<{ answer: T; eventsRead: number }> {
    const before = stores.counted.eventsRead;
    const answer = await read();
    return { answer, eventsRead: stores.counted.eventsRead - before };
  }
  const page = (offset: number, limit = 100) => counted(() => history.execute(new RecordHistoryQuery(CUSTOMER, ACCOUNT, id, { offset, limit })));
  const at = (second: number) => counted(() => asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, second)));
  /** The whole stream folded up to `revision`, as the service folded it before snapshots. */
  const fullFold = (revision: number) => all.slice(0, revision + 1).reduce<RecordState | null>((state, e) => evolveRecord(CUSTOMER, state, e), null);
  const expectedPage = (offset: number, limit = 100) => recordHistory(CUSTOMER, all.slice(offset, offset + limit), fullFold(offset - 1), false);

  /** A page's events, its first and last event, one snapshot and the events after it: at most SNAPSHOT_EVERY - 1. */
  const PAGE_BOUND = 100 + 3 + SNAPSHOT_EVERY - 1;
  /** As-of: first and last event, log2(20,000) probes, one snapshot and the events after it. */
  const AS_OF_BOUND = 2 + 15 + 1 + SNAPSHOT_EVERY - 1;

  it('reads the first page alone, before any snapshot exists', async () => {
    const { answer, eventsRead } = await page(0);
    expect(answer).toEqual({ entries: expectedPage(0), total: COUNT });
    expect(eventsRead).toBe(1 + 1 + 100); // the first event, the last, the page
  });

  it('reads the stream once for the first read deep into it, storing its snapshots on the way', async () => {
    const { answer, eventsRead } = await page(COUNT - 100);
    expect(answer).toEqual({ entries: expectedPage(COUNT - 100), total: COUNT });
    expect(eventsRead).toBeLessThanOrEqual(COUNT + 3);
    const snapshots = await stores.inner.readStream(snapshotStreamOf(streamIdOf(CUSTOMER, id)));
    expect(snapshots).toHaveLength(COUNT / SNAPSHOT_EVERY - 1);
  });

  it.each([
    ['the last page', COUNT - 100, 100],
    ['the first page', 0, 100],
    ['a page across a snapshot', 12_345, 100],
    ['the last event alone', COUNT - 1, 1],
    ['a page past the end', COUNT + 50, 100],
  ])('then reads %s for what it shows, whatever its place', async (_, offset, limit) => {
    const { answer, eventsRead } = await page(offset, limit);
    expect(answer).toEqual({ entries: expectedPage(offset, limit), total: COUNT });
    expect(eventsRead).toBeLessThanOrEqual(PAGE_BOUND);
  });

  it.each([
    ['at the first second', 0],
    ['in the middle', 123],
    ['a second before the last append', COUNT / PER_SECOND - 2],
    ['after the last append', 10_000],
  ])('answers an as-of read %s from a snapshot, by a binary search of the revisions', async (_, second) => {
    const { answer, eventsRead } = await at(T0 + second);
    const revision = Math.min(COUNT - 1, (second + 1) * PER_SECOND - 1);
    expect(answer).toEqual(fullFold(revision));
    expect(eventsRead).toBeLessThanOrEqual(AS_OF_BOUND);
  });

  it('answers 404 for a second before the record, and for another account, reading two events at most', async () => {
    await expect(at(T0 - 1)).rejects.toMatchObject({ reason: 'not_found' });
    const before = stores.counted.eventsRead;
    await expect(history.execute(new RecordHistoryQuery(CUSTOMER, 'acc-2', id, { offset: 0, limit: 100 }))).rejects.toMatchObject({ reason: 'not_found' });
    await expect(asOf.execute(new RecordAsOfQuery(CUSTOMER, 'acc-2', id, T0 + 50))).rejects.toMatchObject({ reason: 'not_found' });
    expect(stores.counted.eventsRead - before).toBe(2);
  });

  it('folds only the events since its last snapshot for a record grown since, and stores the new ones', async () => {
    const stream = streamIdOf(CUSTOMER, id);
    await stores.store.appendToStream(
      stream,
      Array.from({ length: 250 }, (_, i) => update(COUNT + i)),
      COUNT - 1,
    );
    all = await stores.store.readStream(stream);
    const grown = await page(COUNT + 150);
    expect(grown.answer).toEqual({ entries: expectedPage(COUNT + 150), total: COUNT + 250 });
    // The events from the last snapshot to the page, the page, and a few single reads.
    expect(grown.eventsRead).toBeLessThanOrEqual(250 + 100 + 4);
    expect(await stores.inner.readStream(snapshotStreamOf(stream))).toHaveLength((COUNT + 200) / SNAPSHOT_EVERY - 1);
    expect((await page(COUNT + 150)).eventsRead).toBeLessThanOrEqual(PAGE_BOUND);
  });

  it('after erasure, shows every entry with null values, reads no snapshot, and the record exists at no time', async () => {
    const stream = streamIdOf(CUSTOMER, id);
    await stores.keys.destroy(stream, ACCOUNT);
    await stores.store.appendToStream(stream, [newEvent('CustomerErased', {})], 'any');
    const total = COUNT + 251;
    const last = await page(total - 100);
    expect(last.answer.total).toBe(total);
    expect(last.answer.entries.map((e) => [e.revision, e.changes])).toEqual(
      all
        .slice(total - 100)
        .map((e) => [e.revision, Object.fromEntries(Object.keys(e.data).map((f) => [f, null]))])
        .concat([[total - 1, {}]]),
    );
    // The first event, the last, the page: nothing folded.
    expect(last.eventsRead).toBe(1 + 1 + 100);
    await expect(at(T0 + 100)).rejects.toMatchObject({ reason: 'not_found' });
    // The snapshots are sealed with the record's key, and open as nothing once it is destroyed.
    const [snapshot] = await stores.store.readStream(snapshotStreamOf(stream), 10, 1);
    expect(Object.values(snapshot.data).every((value) => value === '')).toBe(true);
    const [raw] = await stores.inner.readStream(snapshotStreamOf(stream), 10, 1);
    expect(raw.data).toEqual({ fields: ['name', 'email', 'company'], sealed: expect.any(String) });
  });
});

describe('as-of reads of a record deleted at the end of a snapshot block', () => {
  it('folds the delete from the snapshot before it: the record is gone from its second on, there before', async () => {
    const stores = openStores();
    try {
      // 200 events, 100 to an append (one second each): the delete is revision 199, where snapshot 1 would end.
      const id = await longRecord(stores.store, 2 * SNAPSHOT_EVERY, SNAPSHOT_EVERY, newEvent('CustomerDeleted', {}));
      const asOf = new RecordAsOfHandler(stores.store, stores.keys);
      await expect(asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, T0 + 1))).rejects.toMatchObject({ reason: 'not_found' });
      const before = await asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, T0));
      expect(before).toMatchObject({ revision: SNAPSHOT_EVERY - 1, deleted: false, fields: { name: `Ada ${SNAPSHOT_EVERY - 1}` } });
      // Snapshot 0 only: none holds a deleted record.
      expect(await stores.inner.readStream(snapshotStreamOf(streamIdOf(CUSTOMER, id)))).toHaveLength(1);
      await expect(asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, T0 + 1))).rejects.toMatchObject({ reason: 'not_found' });
    } finally {
      await stores.dispose();
    }
  });
});

describe('history and as-of reads of a record whose key is destroyed, its erasure event not yet in its stream', () => {
  it('answer as for an erased record: as-of 404, history with no value (an erasure cut short, or events restored from before it)', async () => {
    const stores = openStores();
    try {
      const id = await longRecord(stores.store, 3, 3);
      const asOf = new RecordAsOfHandler(stores.store, stores.keys);
      const history = new RecordHistoryHandler(stores.store, stores.keys);
      expect(await asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, T0))).toMatchObject({ fields: { name: 'Ada 2' } });
      await stores.keys.destroy(streamIdOf(CUSTOMER, id), ACCOUNT);
      await expect(asOf.execute(new RecordAsOfQuery(CUSTOMER, ACCOUNT, id, T0))).rejects.toMatchObject({ reason: 'not_found' });
      const { entries, total } = await history.execute(new RecordHistoryQuery(CUSTOMER, ACCOUNT, id, { offset: 0, limit: 10 }));
      expect(total).toBe(3);
      expect(entries.map((e) => e.changes)).toEqual(entries.map(() => expect.objectContaining({ name: null })));
      expect(entries.flatMap((e) => Object.values(e.changes ?? {}))).toEqual(entries.flatMap((e) => Object.keys(e.changes ?? {}).map(() => null)));
    } finally {
      await stores.dispose();
    }
  });
});
