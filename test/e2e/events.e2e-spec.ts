import type { EventStore } from '../../src/event-store/event-store.port';
import { uid } from '../support/http-assertions';
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
    const res = await t.http
      .post(withToken('customers'))
      .set('X-Request-Id', requestId)
      .send({ name: 'Ada', email: 'ada@x.io', tel: 21 })
      .expect(201);
    return res.body.data.Customer.id as string;
  };

  it('records the fields set, and metadata without the token', async () => {
    const id = await create('req-create-1');
    const [created] = await store.readStream(`customer-${id}`);
    expect(created.type).toBe('CustomerCreated');
    expect(created.data).toEqual({ name: 'Ada', email: 'ada@x.io', tel: '21' });
    expect(created.metadata).toEqual({
      accountId: ACCOUNT_IDS.a,
      correlationId: 'req-create-1',
      causationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      schemaVersion: 1,
    });
    expect(JSON.stringify({ data: created.data, metadata: created.metadata })).not.toContain(TOKENS.a);
  });

  it('records only the fields an update changes, and nothing for an update that changes nothing', async () => {
    const id = await create('req-create-2');
    await t.http.put(withToken(`customers/${id}`)).send({ name: 'Ada', company: 'Acme', tel: '21' }).expect(200);
    await t.http.put(withToken(`customers/${id}`)).send({ name: 'Ada', company: 'Acme' }).expect(200);
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
    await t.http.put(withToken(`profiles/${id}`)).send({ slug: other }).expect(200);
    const old = await store.readStream(`profile_slug-${mine.toLowerCase()}`);
    expect(old.map((e) => [e.type, e.data])).toEqual([
      ['SlugReserved', { slug: mine, profileId: id }],
      ['SlugReleased', { slug: mine, profileId: id }],
    ]);
    expect((await store.readStream(`profile_slug-${other.toLowerCase()}`)).map((e) => e.type)).toEqual(['SlugReserved']);
  });
});
