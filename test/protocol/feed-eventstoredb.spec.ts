import { InMemoryEventStoreDb, ScriptedEvent, startInMemoryEventStoreDb } from '../support/scripted-eventstoredb';
import { readFeed, readPage } from '../support/feed-client';
import { startTestApp, TestApp, TOKENS } from '../support/test-app';

/**
 * PROTOCOL TESTS, NOT TESTS AGAINST A SERVER: the change feed over the EventStoreDB adapter, with
 * the service's event store at a scripted gRPC endpoint built from the client's own service
 * definitions that keeps a log in memory (startInMemoryEventStoreDb in
 * test/support/scripted-eventstoredb.ts): it stores the batch appends it is sent, answers reads of
 * streams and of $all from that log, and serves filtered subscriptions from it, live ones
 * included. Read models (the feed's index among them) and keys on SQLite. What it shows: the feed's index is folded from a subscription over the protocol,
 * its pages are the events read back over the protocol and opened with their keys, in the order of
 * the log's positions (byte offsets, not sequence numbers). What the server itself does is for
 * test/contract and `npm run test:integration` against EventStoreDB.
 */
describe('the change feed over the EventStoreDB protocol (scripted endpoint, not a server)', () => {
  let server: InMemoryEventStoreDb;
  let log: ScriptedEvent[];
  let t: TestApp;

  beforeAll(async () => {
    server = await startInMemoryEventStoreDb();
    log = server.log;
    t = await startTestApp({ env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '5000', FEED_HEARTBEAT_MS: '300' } });
  });
  afterAll(async () => {
    await t?.close();
    await server?.close();
  });

  const send = async (method: string, path: string, body?: unknown) => {
    const res = await t.http[method as 'post'](`/v1/${path}`)
      .set('Authorization', `Bearer ${TOKENS.a}`)
      .send(body as object);
    expect(res.status).toBeLessThan(300);
    return res.body as { data: Record<string, { id: string }> };
  };

  it('folds the feed’s index from the subscription and serves pages read back from the log, in its order', async () => {
    const customer = (await send('post', 'customers', { name: 'Ada', email: 'ada@protocol.example' })).data.Customer.id;
    await send('put', `customers/${customer}`, { name: 'Ada L' });
    const profile = (await send('post', 'profiles', { name: 'Shop' })).data.Profile.id;
    await send('delete', `customers/${customer}`);

    const { entries } = await readFeed(t.baseUrl, TOKENS.a, undefined, 2);
    expect(entries.map((e) => [e.type, e.subject, e.data.revision])).toEqual([
      ['customer.created', customer, 0],
      ['customer.updated', customer, 1],
      ['profile.created', profile, 0],
      ['customer.deleted', customer, 2],
    ]);
    expect(entries[0].data.changes).toEqual({ name: { from: '', to: 'Ada' }, email: { from: '', to: 'ada@protocol.example' } });
    expect(entries[1].data.changes).toEqual({ name: { from: 'Ada', to: 'Ada L' } });
    // The log holds the values sealed: the feed opened them with the record's key.
    expect(JSON.stringify(log.filter((e) => e.streamId === `customer-${customer}`).map((e) => e.data))).not.toContain('ada@protocol.example');
    // Its order is the log's: the record streams' events by position, the slug reservation left out.
    expect(entries.map((e) => `${e.subject}@${e.data.revision}`)).toEqual(
      log.filter((e) => /^(customer|profile)-/.test(e.streamId)).map((e) => `${e.streamId.replace(/^[a-z]+-/, '')}@${e.revision}`),
    );
    // An entry's id resumes after it.
    const { entries: rest } = await readFeed(t.baseUrl, TOKENS.a, entries[1].id);
    expect(rest.map((e) => e.id)).toEqual(entries.slice(2).map((e) => e.id));
    // Another account sees none of it.
    expect((await readFeed(t.baseUrl, TOKENS.b)).entries).toEqual([]);
  });

  it('wakes a long-poll with an append that reaches the index through the live subscription', async () => {
    const { cursor } = await readFeed(t.baseUrl, TOKENS.a);
    const polled = readPage(t.baseUrl, TOKENS.a, { after: cursor, wait: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const id = (await send('post', 'customers', { email: 'live@protocol.example' })).data.Customer.id;
    const page = await polled;
    expect(page.entries.map((e) => [e.type, e.subject])).toEqual([['customer.created', id]]);
  });

  it('tells an erased record’s earlier entries with every value null, its erasure last', async () => {
    const { cursor } = await readFeed(t.baseUrl, TOKENS.a);
    const id = (await send('post', 'customers', { name: 'Bob', email: 'bob@protocol.example' })).data.Customer.id;
    await send('put', `customers/${id}`, { name: 'Bobby' });
    await send('post', `customers/${id}/erase`);
    const { entries } = await readFeed(t.baseUrl, TOKENS.a, cursor);
    expect(entries.map((e) => [e.type, e.data.changes])).toEqual([
      ['customer.created', { name: null, email: null }],
      ['customer.updated', { name: null }],
      ['customer.erased', {}],
    ]);
  });
});
