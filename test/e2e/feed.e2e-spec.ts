import type { FeedEntry as Entry } from '../support/feed-client';
import { contact } from '../support/http-assertions';
import { describeUnlessWorkers } from '../support/stores';
import { startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

/** GET /v1/events (CONTRACT.md "Change feed"), over real sockets on the embedded store. */
describe('the change feed', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ env: { FEED_HEARTBEAT_MS: '300' } })));
  afterAll(() => t.close());

  /** Every entry of the account after `after`, page by page, and the cursor after the last. */
  async function readAll(token: string = TOKENS.a, after?: string, limit = 1000): Promise<{ entries: Entry[]; cursor: string }> {
    const entries: Entry[] = [];
    let cursor = after;
    for (;;) {
      const query = `events?limit=${limit}${cursor ? `&after=${cursor}` : ''}`;
      const res = await t.http.get(withToken(query, token)).expect(200);
      entries.push(...(res.body.data as Entry[]));
      cursor = res.headers['x-next-cursor'];
      expect(cursor).toMatch(/^[A-Za-z0-9_-]{32}$/);
      if (res.body.data.length < limit) return { entries, cursor: cursor };
    }
  }

  const history = async (kind: string, id: string) => (await t.http.get(withToken(`${kind}/${id}/history`)).expect(200)).body.data as Rec[];
  type Rec = Record<string, unknown>;

  it('tells every change of the account in the order stored, as CloudEvents with the changes its history shows', async () => {
    const { cursor: start } = await readAll();
    const id = (await t.http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@feed.io' }).expect(201)).body.data.Customer.id;
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ name: 'Ada L', email: 'ada@feed.io' })
      .expect(200);
    const profile = (await t.http.post(withToken('profiles')).send({ name: 'Shop' }).expect(201)).body.data.Profile.id;
    await t.http.delete(withToken(`customers/${id}`)).expect(200);
    const { entries } = await readAll(TOKENS.a, start);
    expect(entries.map((e) => [e.type, e.subject, e.data.revision])).toEqual([
      ['customer.created', id, 0],
      ['customer.updated', id, 1],
      ['profile.created', profile, 0],
      ['customer.deleted', id, 2],
    ]);
    const [created] = entries;
    expect(created).toEqual({
      specversion: '1.0',
      id: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
      source: '/v1/customers',
      type: 'customer.created',
      subject: id,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      datacontenttype: 'application/json',
      dataschema: 'urn:profiles-customers-service:feed-data:customer:v1',
      data: { revision: 0, changes: { name: { from: '', to: 'Ada' }, email: { from: '', to: 'ada@feed.io' } } },
    });
    expect(entries.find((e) => e.type === 'profile.created')?.dataschema).toBe('urn:profiles-customers-service:feed-data:profile:v1');
    const told = entries.filter((e) => e.subject === id);
    expect(told.map((e) => ({ revision: e.data.revision, changes: e.data.changes, occurred: e.time }))).toEqual(
      (await history('customers', id)).map((h) => ({ revision: h.revision, changes: h.changes, occurred: h.occurred })),
    );
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  });

  it('pages by cursor: the pages joined are the whole feed, each entry once, and an entry id resumes after that entry', async () => {
    for (let i = 0; i < 5; i++) await t.http.post(withToken('customers')).send(contact()).expect(201);
    const { entries: all } = await readAll();
    const { entries: paged } = await readAll(TOKENS.a, undefined, 2);
    expect(paged.map((e) => e.id)).toEqual(all.map((e) => e.id));
    const { entries: rest } = await readAll(TOKENS.a, all[2].id);
    expect(rest.map((e) => e.id)).toEqual(all.slice(3).map((e) => e.id));
  });

  it('shows another account none of it, and refuses its cursors', async () => {
    const { entries, cursor } = await readAll(TOKENS.b);
    expect(entries.every((e) => e.subject)).toBe(true);
    const mine = (await readAll(TOKENS.a)).entries.map((e) => e.subject);
    expect(entries.some((e) => mine.includes(e.subject))).toBe(false);
    const res = await t.http.get(withToken(`events?after=${(await readAll(TOKENS.a)).cursor}`, TOKENS.b)).expect(400);
    expect(res.body.error.details).toEqual([{ field: 'after', message: expect.stringContaining('cursor') }]);
    await t.http.get(withToken(`events?after=${cursor}`, TOKENS.b)).expect(200);
  });

  it.each([
    ['after=nonsense', 'after'],
    ['after=', 'after'],
    [`after=${'A'.repeat(32)}`, 'after'],
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=x', 'limit'],
    ['wait=31', 'wait'],
    ['wait=-1', 'wait'],
    ['limit=1&limit=2', 'limit'],
    ['after[a]=b', 'after'],
  ])('answers ?%s with 400 naming %s', async (query, field) => {
    const res = await t.http.get(withToken(`events?${query}`)).expect(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
  });

  it('holds a long-poll until a change arrives, and answers an empty page with the cursor sent when none does', async () => {
    const { cursor } = await readAll();
    const empty = await t.http.get(withToken(`events?after=${cursor}&wait=1`)).expect(200);
    expect(empty.body.data).toEqual([]);
    expect(empty.headers['x-next-cursor']).toBe(cursor);
    const started = Date.now();
    const polled = t.http.get(withToken(`events?after=${cursor}&wait=20`)).then((res) => res);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const id = (await t.http.post(withToken('customers')).send(contact()).expect(201)).body.data.Customer.id;
    const res = await polled;
    expect(res.status).toBe(200);
    expect(res.body.data.map((e: Entry) => [e.type, e.subject])).toEqual([['customer.created', id]]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('blanks an erased record’s earlier entries, and tells its erasure last', async () => {
    const { cursor } = await readAll();
    const id = (await t.http.post(withToken('customers')).send({ name: 'Bob', email: 'bob@feed.io' }).expect(201)).body.data.Customer.id;
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ name: 'Bobby', email: 'bob@feed.io' })
      .expect(200);
    await t.http.post(withToken(`customers/${id}/erase`)).expect(200);
    const { entries } = await readAll(TOKENS.a, cursor);
    expect(entries.map((e) => [e.type, e.data.changes])).toEqual([
      ['customer.created', { name: null, email: null }],
      ['customer.updated', { name: null }],
      ['customer.erased', {}],
    ]);
    expect(JSON.stringify(entries)).not.toMatch(/Bob|bob@feed/);
  });

  describe('as server-sent events', () => {
    /** Opens the stream; `events()` gives what has arrived so far, parsed. */
    async function open(headers: Record<string, string> = {}, query = '') {
      const abort = new AbortController();
      const res = await fetch(`${t.baseUrl}/v1/events${query}`, {
        headers: { Authorization: `Bearer ${TOKENS.a}`, Accept: 'text/event-stream', ...headers },
        signal: abort.signal,
      });
      let text = '';
      const reading = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of res.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
      })().catch(() => undefined);
      const events = () =>
        text
          .split('\n\n')
          .filter((block) => block.includes('data: '))
          .map((block) => Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)])));
      const until = async (check: () => boolean) => {
        for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
        expect(check()).toBe(true);
      };
      return { res, events, text: () => text, until, close: async () => (abort.abort(), await reading) };
    }

    it('streams the entries, then new ones as they come, with heartbeats while idle', async () => {
      const { entries } = await readAll();
      const stream = await open();
      expect(stream.res.status).toBe(200);
      expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await stream.until(() => stream.events().length === entries.length);
      expect(stream.events().map((e) => e.id)).toEqual(entries.map((e) => e.id));
      expect(stream.events().map((e) => e.event)).toEqual(entries.map((e) => e.type));
      expect(JSON.parse(stream.events()[0].data)).toEqual(entries[0]);
      const id = (await t.http.post(withToken('customers')).send(contact()).expect(201)).body.data.Customer.id;
      await stream.until(() => stream.events().length === entries.length + 1);
      expect(JSON.parse(stream.events().at(-1)!.data).subject).toBe(id);
      await stream.until(() => /\n: idle\n/.test(stream.text()));
      await stream.close();
    });

    it('resumes after Last-Event-ID (or after), and refuses a foreign one with 400 naming it', async () => {
      const { entries } = await readAll();
      const resumed = await open({ 'Last-Event-ID': entries[1].id }, `?after=${entries[0].id}`);
      await stream(resumed, entries.slice(2));
      const after = await open({}, `?after=${entries[0].id}`);
      await stream(after, entries.slice(1));
      const foreign = await fetch(`${t.baseUrl}/v1/events`, {
        headers: { Authorization: `Bearer ${TOKENS.b}`, Accept: 'text/event-stream', 'Last-Event-ID': entries[0].id },
      });
      expect(foreign.status).toBe(400);
      expect(((await foreign.json()) as { error: { details: unknown } }).error.details).toEqual([{ field: 'Last-Event-ID', message: expect.any(String) }]);

      async function stream(s: Awaited<ReturnType<typeof open>>, expected: Entry[]) {
        await s.until(() => s.events().length === expected.length);
        expect(s.events().map((e) => e.id)).toEqual(expected.map((e) => e.id));
        await s.close();
      }
    });
  });

  describeUnlessWorkers('under a rate limit', 'each worker counts its own share of the limit', () => {
    let limited: TestApp;
    beforeAll(async () => (limited = await startTestApp({ env: { RATE_LIMIT_REQUESTS: '3', FEED_HEARTBEAT_MS: '100' } })));
    afterAll(() => limited.close());

    it('counts a stream, however long it lasts, and a long-poll, as one request each', async () => {
      const abort = new AbortController();
      const stream = await fetch(`${limited.baseUrl}/v1/events`, {
        headers: { Authorization: `Bearer ${TOKENS.a}`, Accept: 'text/event-stream' },
        signal: abort.signal,
      });
      expect(stream.status).toBe(200);
      let text = '';
      const reading = (async () => {
        for await (const chunk of stream.body!) text += Buffer.from(chunk as Uint8Array).toString();
      })().catch(() => undefined);
      await limited.http.get(withToken('events?wait=1')).expect(200);
      // The stream has sent several heartbeats by now: none of them counted.
      await new Promise((resolve) => setTimeout(resolve, 500));
      await limited.http.get(withToken('events')).expect(200);
      const refused = await limited.http.get(withToken('events')).expect(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      abort.abort();
      await reading;
      expect(text).toMatch(/: idle\n\n: idle/);
    });
  });

  describeUnlessWorkers('when the app closes', 'closes the app in this process', () => {
    it('ends its event streams and answers its long-polls, rather than wait for their consumers', async () => {
      const app = await startTestApp();
      const stream = await fetch(`${app.baseUrl}/v1/events`, { headers: { Authorization: `Bearer ${TOKENS.a}`, Accept: 'text/event-stream' } });
      const streamed = stream.text();
      const polled = app.http.get(withToken('events?wait=30')).then((res) => res);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const closing = Date.now();
      await app.close();
      expect(Date.now() - closing).toBeLessThan(5000);
      expect(await streamed).toBe('retry: 1000\n\n');
      expect((await polled).body).toEqual({ data: [], success: true, status: 200 });
    });
  });
});
