import { join } from 'node:path';
import { type EventStore, occurredAt } from '../../src/event-store/event-store.port';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { uid } from '../support/http-assertions';
import { LIVE_STORES } from '../support/stores';
import { ACCOUNT_IDS, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

/** What the write side leaves in the event store, seen after real HTTP requests. */
describe('events appended by the API', () => {
  let t: TestApp;
  let store: EventStore;
  beforeAll(async () => {
    t = await startTestApp();
    store = t.events;
  });
  afterAll(() => t.close());

  const create = async (requestId: string) => {
    const res = await t.http.post(withToken('customers')).set('X-Request-Id', requestId).send({ name: 'Ada', email: 'ada@x.io', tel: 21 }).expect(201);
    return res.body.data.Customer.id as string;
  };

  it('records the fields set, and metadata without the token: the event carries the time its change was decided', async () => {
    const before = Date.now();
    const id = await create('req-create-1');
    const [created] = await store.readStream(`customer-${id}`);
    expect(created.type).toBe('CustomerCreated');
    expect(created.data).toEqual({ name: 'Ada', email: 'ada@x.io', tel: '21' });
    expect(created.metadata).toEqual({
      accountId: ACCOUNT_IDS.a,
      correlationId: 'req-create-1',
      causationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      schemaVersion: 2,
      eventVersion: 2, // the shape of its type it was written in
      occurredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    // Decided before it was stored, within the request.
    expect(occurredAt(created).getTime()).toBeGreaterThanOrEqual(before);
    expect(occurredAt(created).getTime()).toBeLessThanOrEqual(Date.now());
    expect(JSON.stringify({ data: created.data, metadata: created.metadata })).not.toContain(TOKENS.a);
  });

  // The rows of the SQLite file; on live stores the same sealing is seen through the event store's reads only.
  (LIVE_STORES ? it.skip : it)('stores the values sealed with the record’s key: the events table names the fields, in plain, and holds no value', async () => {
    const id = await create('req-create-sealed');
    const db = openSqliteDatabase(join(t.dataDir, 'service.sqlite'), { durable: false });
    try {
      const row = db.prepare('SELECT data, metadata FROM events WHERE stream_id = ?').get(`customer-${id}`) as { data: string; metadata: string };
      expect(JSON.parse(row.data)).toEqual({ fields: ['name', 'email', 'tel'], sealed: expect.stringMatching(/^[A-Za-z0-9+/]{40,}={0,2}$/) });
      // The sealed text is random base64: a short value like "Ada" turns up in it by chance, so look for the
      // values as a plain JSON encoding would hold them, in the decoded bytes.
      const sealed = Buffer.from(JSON.parse(row.data).sealed, 'base64');
      for (const value of ['"Ada"', '"ada@x.io"', '"21"']) expect(sealed.includes(value)).toBe(false);
      expect(JSON.parse(row.metadata)).toMatchObject({ accountId: ACCOUNT_IDS.a, schemaVersion: 2 });
    } finally {
      db.close();
    }
  });

  it('records only the fields an update changes, and nothing for an update that changes nothing', async () => {
    const id = await create('req-create-2');
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ name: 'Ada', company: 'Acme', tel: '21' })
      .expect(200);
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ name: 'Ada', company: 'Acme' })
      .expect(200);
    const events = await store.readStream(`customer-${id}`);
    expect(events.map((e) => [e.type, e.revision, e.data])).toEqual([
      ['CustomerCreated', 0, { name: 'Ada', email: 'ada@x.io', tel: '21' }],
      ['CustomerUpdated', 1, { company: 'Acme' }],
    ]);
  });

  it('records a deletion, and keeps the stream', async () => {
    const id = await create('req-create-3');
    await t.http.delete(withToken(`customers/${id}`)).expect(200);
    expect((await store.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerDeleted']);
  });

  it('reserves a slug in its own stream, and releases it when the profile gives it up', async () => {
    const [mine, other] = [uid('MyShop'), uid('OtherShop')];
    const res = await t.http.post(withToken('profiles')).send({ slug: mine }).expect(201);
    const id = res.body.data.Profile.id;
    await t.http
      .put(withToken(`profiles/${id}`))
      .send({ slug: other })
      .expect(200);
    const old = await store.readStream(`profile_slug-${mine.toLowerCase()}`);
    expect(old.map((e) => [e.type, e.data])).toEqual([
      ['SlugReserved', { slug: mine, profileId: id }],
      ['SlugReleased', { slug: mine, profileId: id }],
    ]);
    expect((await store.readStream(`profile_slug-${other.toLowerCase()}`)).map((e) => e.type)).toEqual(['SlugReserved']);
  });
});
