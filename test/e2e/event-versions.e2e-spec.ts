import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
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
