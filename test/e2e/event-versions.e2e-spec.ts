import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { CUSTOMER } from '../../src/customers/customer.decider';
import type { NewEvent, StoredEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { timeFromRecorded } from '../../src/records/record';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { runFailingStart } from '../support/child-service';
import { describeOnSqlite } from '../support/stores';
import { ACCOUNT_IDS, makeDataDir, startTestApp, TestApp, withToken } from '../support/test-app';

/**
 * Events stored in an older shape of their type read as its current one on every path. Two
 * customers are stored before the service starts, with the same changes at the same times: one in
 * version 1 (no business time: the store's recorded time stands for it), one in version 2 (the time
 * stamped in its metadata). Every answer about them is the same but for their ids.
 */
describeOnSqlite('a version 1 event and its version 2 form', () => {
  const T = Date.parse('2026-03-01T10:00:00.000Z');
  const v1 = randomUUID();
  const v2 = randomUUID();
  let t: TestApp;

  beforeAll(async () => {
    const dataDir = makeDataDir();
    const db = openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: true });
    const store = new SqliteEventStore(db);
    const metadata = { accountId: ACCOUNT_IDS.a, correlationId: 'seed', causationId: 'seed' };
    const append = async (id: string, at: number, revision: number | 'no_stream', type: string, data: Record<string, string>, version: 1 | 2) => {
      const now = jest.spyOn(Date, 'now').mockReturnValue(at); // the store's recorded time
      try {
        const stamped = version === 2 ? { occurredAt: new Date(at).toISOString(), eventVersion: 2 } : {};
        const event: NewEvent = { id: randomUUID(), type, data, metadata: { ...metadata, ...stamped } };
        await store.appendToStream(`customer-${id}`, [event], revision);
      } finally {
        now.mockRestore();
      }
    };
    for (const [id, version] of [
      [v1, 1],
      [v2, 2],
    ] as const) {
      await append(id, T, 'no_stream', 'CustomerCreated', { name: 'Ada', email: `ada@versions.io` }, version);
      await append(id, T + 5_000, 0, 'CustomerUpdated', { company: 'Analytical Engines' }, version);
    }
    await store.close();
    t = await startTestApp({ dataDir });
    // Its read models catch up with the events stored before it started: reads answer 503 until then.
    for (const end = Date.now() + 30_000; (await t.http.get('/health/ready')).status !== 200; await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > end) throw new Error('the service was not ready within 30 s');
    }
  });
  afterAll(() => t?.close());

  const get = async (path: string) => (await t.http.get(withToken(path)).expect(200)).body;
  const withoutId = (id: string, value: unknown) => JSON.parse(JSON.stringify(value).split(id).join('<id>'));

  it('answers reads, as-of reads, lists, histories and the feed alike', async () => {
    const answers = async (id: string) =>
      withoutId(id, {
        read: await get(`customers/${id}`),
        before: await t.http.get(withToken(`customers/${id}?as_of=${T / 1000 + 2}`)).then((r) => ({ status: r.status, body: r.body })),
        after: await get(`customers/${id}?as_of=${T / 1000 + 6}`),
        history: await get(`customers/${id}/history`),
        list: (await get('customers?email=ada%40versions.io')).data.filter((c: { Customer: { id: string } }) => c.Customer.id === id),
        feed: (await get('events?limit=100')).data.filter((e: { subject: string }) => e.subject === id).map(({ id: _, ...entry }: { id: string }) => entry),
      });
    const first = await answers(v1);
    expect(first.read.data[0].Customer).toMatchObject({ company: 'Analytical Engines', created: T / 1000 });
    expect(first.before.body.data[0].Customer.company).toBe('');
    expect(first.history.data.map((h: { occurred: string }) => h.occurred)).toEqual([new Date(T).toISOString(), new Date(T + 5_000).toISOString()]);
    expect(first.feed.map((e: { time: string }) => e.time)).toEqual([new Date(T).toISOString(), new Date(T + 5_000).toISOString()]);
    expect(await answers(v2)).toEqual(first);
  });
});

/**
 * A rollback after an upgrade: the store holds an event in a version this build does not read. The
 * service refuses to start, naming the type and versions, rather than misread or stop on it later.
 */
describeOnSqlite('a store written by a newer build', () => {
  it('refuses to start, naming the type and both versions', async () => {
    const dataDir = makeDataDir();
    const db = openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: true });
    // The newer build's store: CustomerUpdated has a version 3, and its first one is written.
    const newer = { ...CUSTOMER, upcasters: { ...CUSTOMER.upcasters, CustomerUpdated: { 1: timeFromRecorded, 2: (e: StoredEvent) => [e] } } };
    const store = await UpcastingEventStore.open(new SqliteEventStore(db), [newer]);
    const id = randomUUID();
    const metadata = { accountId: ACCOUNT_IDS.a, correlationId: 'seed', causationId: 'seed', occurredAt: new Date().toISOString() };
    await store.appendToStream(
      `customer-${id}`,
      [{ id: randomUUID(), type: 'CustomerCreated', data: { name: 'Ada' }, metadata: { ...metadata, eventVersion: 2 } }],
      'no_stream',
    );
    await store.appendToStream(
      `customer-${id}`,
      [{ id: randomUUID(), type: 'CustomerUpdated', data: { name: 'Ada L' }, metadata: { ...metadata, eventVersion: 3 } }],
      0,
    );
    await store.close();

    const { code, output } = await runFailingStart(dataDir, { WORKERS: '1' });
    expect(code).toBe(1);
    expect(output).toMatch(
      /^Cannot start: The event store holds CustomerUpdated version 3, where this build reads up to version 2: a newer build of the service wrote them\. Run that build or a newer one/m,
    );
    expect(output).not.toMatch(/Listening on/);
  }, 60_000);
});
