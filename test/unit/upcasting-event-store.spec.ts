import { randomUUID } from 'node:crypto';
import { type EventBatch, type NewEvent, occurredAt, type StoredEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { checkChains, currentVersion, UpcasterChains, UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { evolveRecord } from '../../src/records/record';
import { openTempSqlite } from '../support/temp-sqlite';

const metadata = { accountId: 'acc', correlationId: 'c', causationId: 'c' };
const event = (type: string, data: Record<string, unknown>, more: Record<string, unknown> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { ...metadata, ...more },
});

describe('events read in the shape their type has now (upcasting)', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  let inner: SqliteEventStore;
  beforeEach(() => {
    sqlite = openTempSqlite();
    inner = new SqliteEventStore(sqlite.db);
  });
  afterEach(async () => {
    await inner.close();
    sqlite.dispose();
  });

  it('reads a version 1 record event with the time the store recorded as its business time, and a version 2 one as it is', async () => {
    const store = new UpcastingEventStore(inner, [CUSTOMER]);
    const id = randomUUID();
    await inner.appendToStream(`customer-${id}`, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    await inner.appendToStream(`customer-${id}`, [event('CustomerUpdated', { name: 'Ada L' }, { occurredAt: '2031-01-01T00:00:00.000Z', eventVersion: 2 })], 0);
    const [v1, v2] = await store.readStream(`customer-${id}`);
    const [raw] = await inner.readStream(`customer-${id}`);
    // The recorded time handed on as the store's Date: read, and printed (the CLI's JSON), as version 2's string is.
    expect(v1.metadata).toMatchObject({ occurredAt: raw.recordedAt, eventVersion: 2 });
    expect(occurredAt(v1)).toEqual(raw.recordedAt);
    expect(JSON.parse(JSON.stringify(v1.metadata))).toMatchObject({ occurredAt: raw.recordedAt.toISOString() });
    expect(v2.metadata).toMatchObject({ occurredAt: '2031-01-01T00:00:00.000Z', eventVersion: 2 });
    // A version 1 event that carries a stamp keeps it.
    await inner.appendToStream(`customer-${id}`, [event('CustomerUpdated', { name: 'Ada M' }, { occurredAt: '2032-01-01T00:00:00.000Z' })], 1);
    expect((await store.readLastEvent(`customer-${id}`))?.metadata).toMatchObject({ occurredAt: '2032-01-01T00:00:00.000Z', eventVersion: 2 });

    // The fold of either form is the same record.
    const twin = { ...v1, metadata: { ...raw.metadata, occurredAt: raw.recordedAt.toISOString(), eventVersion: 2 } };
    expect(evolveRecord(CUSTOMER, null, v1)).toEqual(evolveRecord(CUSTOMER, null, twin));
  });

  it('upcasts the events of a subscription, and leaves the other streams as they are', async () => {
    const store = new UpcastingEventStore(inner, [CUSTOMER]);
    await inner.appendToStream(`customer-${randomUUID()}`, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    await inner.appendToStream('profile_slug-acme', [event('SlugReserved', { slug: 'acme' })], 'no_stream');
    const stop = new AbortController();
    const batches: EventBatch[] = [];
    for await (const batch of store.subscribeToAll({ commit: -1n, prepare: -1n }, { signal: stop.signal })) {
      batches.push(batch);
      if (batches.flatMap((b) => b.events).length >= 2) stop.abort();
    }
    const events = batches.flatMap((b) => b.events);
    expect(events.map((e) => [e.type, e.metadata.eventVersion, e.metadata.occurredAt])).toEqual([
      ['CustomerCreated', 2, events[0].recordedAt],
      ['SlugReserved', undefined, undefined], // not a record's stream: as stored
    ]);
  });

  it('makes one stored event several, or none, as its chain says, and reads the last one shown', async () => {
    const chains: UpcasterChains = {
      ...CUSTOMER.upcasters,
      // Version 2 of CustomerMerged is two events; version 2 of CustomerNoted is none.
      CustomerMerged: {
        1: (e) => [
          { ...e, type: 'CustomerUpdated', data: { name: 'A' } },
          { ...e, type: 'CustomerUpdated', data: { email: 'a@x.io' } },
        ],
      },
      CustomerNoted: { 1: () => [] },
      // Version 2 of CustomerTagged is a CustomerLabelled, a type of its own at its own (first) version.
      CustomerTagged: { 1: (e) => [{ ...e, type: 'CustomerLabelled' }] },
    };
    const store = new UpcastingEventStore(inner, [{ ...CUSTOMER, upcasters: chains }]);
    const id = randomUUID();
    const stream = `customer-${id}`;
    await inner.appendToStream(
      stream,
      [event('CustomerCreated', { name: 'Ada' }), event('CustomerTagged', {}), event('CustomerMerged', {}), event('CustomerNoted', {})],
      'no_stream',
    );
    const read = await store.readStream(stream);
    expect(read.map((e) => [e.type, e.revision, e.data, e.metadata.eventVersion])).toEqual([
      ['CustomerCreated', 0, { name: 'Ada' }, 2],
      ['CustomerLabelled', 1, {}, 1],
      ['CustomerUpdated', 2, { name: 'A' }, 2],
      ['CustomerUpdated', 2, { email: 'a@x.io' }, 2],
    ]);
    expect((await store.readLastEvent(stream))?.data).toEqual({ email: 'a@x.io' });
  });

  it('refuses to read an event of a version newer than the code knows (a rollback after an upgrade), naming it', async () => {
    const store = new UpcastingEventStore(inner, [CUSTOMER]);
    const id = randomUUID();
    await inner.appendToStream(
      `customer-${id}`,
      [event('CustomerCreated', { name: 'Ada' }, { eventVersion: 3, occurredAt: '2031-01-01T00:00:00.000Z' })],
      'no_stream',
    );
    await expect(store.readStream(`customer-${id}`)).rejects.toMatchObject({
      name: 'UnreadableEventError',
      message: `Event customer-${id}@0 cannot be read: it is CustomerCreated version 3, newer than the 2 this version of the service reads`,
    });
  });

  it('hands a subscription the events it cannot upcast as unreadable, and one that reads no values every event as stored', async () => {
    const failing: UpcasterChains = {
      ...CUSTOMER.upcasters,
      CustomerUpdated: {
        1: CUSTOMER.upcasters.CustomerUpdated[1],
        2: () => {
          throw new Error('no company');
        },
      },
    };
    const store = new UpcastingEventStore(inner, [{ ...CUSTOMER, upcasters: failing }]);
    const id = randomUUID();
    await inner.appendToStream(`customer-${id}`, [event('CustomerCreated', { name: 'Ada' }, { eventVersion: 4 })], 'no_stream');
    await inner.appendToStream(`customer-${id}`, [event('CustomerUpdated', { name: 'Ada L' }, { eventVersion: 2 })], 0);
    const subscribed = async (values: boolean) => {
      const stop = new AbortController();
      for await (const batch of store.subscribeToAll({ commit: -1n, prepare: -1n }, { signal: stop.signal, values })) {
        if (batch.events.length >= 2) return batch.events;
      }
      return [];
    };
    expect((await subscribed(true)).map((e) => [e.revision, e.data, e.unreadable])).toEqual([
      [0, {}, 'it is CustomerCreated version 4, newer than the 2 this version of the service reads'],
      [1, {}, 'its upcaster failed: no company'],
    ]);
    // The feed's index keeps an event's place and time only: one it cannot upcast, as stored.
    expect((await subscribed(false)).map((e) => [e.revision, e.metadata.eventVersion, e.unreadable])).toEqual([
      [0, 4, undefined],
      [1, 2, undefined],
    ]);
    // A read of the stream names the event the step failed on.
    await expect(store.readStream(`customer-${id}`, 1)).rejects.toMatchObject({
      name: 'UnreadableEventError',
      revision: 1,
      reason: 'its upcaster failed: no company',
    });
  });

  it('knows each type’s current version from its chain, and refuses a chain with a gap, naming the type and versions', () => {
    expect(currentVersion(CUSTOMER.upcasters, 'CustomerCreated')).toBe(2);
    expect(currentVersion(CUSTOMER.upcasters, 'Unknown')).toBe(1);
    const gap: UpcasterChains = { CustomerCreated: { 1: (e) => [e], 3: (e) => [e] } };
    expect(() => checkChains([{ ...CUSTOMER, upcasters: gap }])).toThrow(
      'Customer events CustomerCreated: no upcaster from version 2 to 3, though version 4 is current',
    );
    expect(() => new UpcastingEventStore(inner, [{ ...CUSTOMER, upcasters: gap }])).toThrow(/no upcaster from version 2/);
  });

  it('refuses to open a store that holds a newer version of a type, or a type it does not know, naming them; after one note per new version', async () => {
    // A newer build: CustomerUpdated at version 3, and a type of its own.
    const newer = {
      ...CUSTOMER,
      events: { ...CUSTOMER.events, merged: 'CustomerMerged' },
      upcasters: { ...CUSTOMER.upcasters, CustomerUpdated: { 1: (e: StoredEvent) => [e], 2: (e: StoredEvent) => [e] } },
    };
    const upgraded = await UpcastingEventStore.open(inner, [newer]);
    const id = randomUUID();
    const appends = jest.spyOn(inner, 'appendToStream');
    await upgraded.appendToStream(`customer-${id}`, [event('CustomerCreated', { name: 'Ada' }, { eventVersion: 2 })], 'no_stream');
    await upgraded.appendToStream(`customer-${id}`, [event('CustomerUpdated', { name: 'Ada L' }, { eventVersion: 3 })], 0);
    await upgraded.appendToStream(`customer-${id}`, [event('CustomerUpdated', { name: 'Ada M' }, { eventVersion: 3 })], 1);
    await upgraded.appendToStream(`customer-${id}`, [event('CustomerMerged', {}, { eventVersion: 1 })], 2);
    // Three notes (each a version not noted before), then each event: nothing noted twice.
    expect(appends.mock.calls.map(([streamId]) => streamId.split('-')[0])).toEqual([
      'service',
      'customer',
      'service',
      'customer',
      'customer',
      'service',
      'customer',
    ]);
    appends.mockRestore();

    // The build before, rolled back to: refused, naming each.
    await expect(UpcastingEventStore.open(inner, [CUSTOMER])).rejects.toThrow(
      "The event store holds CustomerUpdated version 3, where this build reads up to version 2; Customer events of type CustomerMerged (version 1), which this build does not know: a newer build of the service wrote them. Run that build or a newer one (a rollback past an event's new version cannot read it).",
    );
    // The newer build itself, or one newer still, opens it.
    await expect(UpcastingEventStore.open(inner, [newer])).resolves.toBeInstanceOf(UpcastingEventStore);
    // Another instance of the older build writing at its versions notes nothing lower.
    const older = new UpcastingEventStore(inner, [CUSTOMER]);
    await older.appendToStream(`customer-${randomUUID()}`, [event('CustomerCreated', { name: 'Bo' }, { eventVersion: 2 })], 'no_stream');
    await expect(UpcastingEventStore.open(inner, [CUSTOMER])).rejects.toThrow(/CustomerUpdated version 3/);
  });
});
