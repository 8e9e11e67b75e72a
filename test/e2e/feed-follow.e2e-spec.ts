/**
 * The change feed from a consumer's side (issue 35): a consumer that follows it while writers
 * create, update, delete and erase, and is itself killed and resumed, ends with a copy equal to the
 * service's lists; a property test compares the feed with every record's history and with the order
 * the event store keeps; another account sees nothing of it. Over real sockets, in process and (the
 * "WORKERS=2" project) against the built service with two workers.
 */
import fc from 'fast-check';
import { randomInt } from 'node:crypto';
import { asListed, FeedCopy, FeedEntry, FeedStream, listAll, openFeedStream, readFeed, readPage, storedOrder } from '../support/feed-client';
import { uid } from '../support/http-assertions';
import { RUN_SUFFIX } from '../support/stores';
import { startTestApp, TestApp } from '../support/test-app';

/** Accounts of this file alone: the follower's, a stranger's, and one per run of the property test. */
const FOLLOWED = { token: 'feed-followed', account: `account-feed-followed${RUN_SUFFIX}` };
const STRANGER = { token: 'feed-stranger', account: `account-feed-stranger${RUN_SUFFIX}` };
const PROPERTY_RUNS = 25;
/** Accounts for the property's runs, shrinking's included. */
const PROPERTY_ACCOUNTS = 300;
const propertyAccount = (n: number) => ({ token: `feed-prop-${n}`, account: `account-feed-prop-${n}${RUN_SUFFIX}` });
const ACCOUNTS = new Map(
  [FOLLOWED, STRANGER, ...Array.from({ length: PROPERTY_ACCOUNTS }, (_, n) => propertyAccount(n))].map(({ token, account }) => [token, account]),
);

type Resource = 'customers' | 'profiles';
const RESOURCES: Resource[] = ['customers', 'profiles'];

let t: TestApp;
beforeAll(async () => (t = await startTestApp({ accounts: ACCOUNTS, env: { FEED_HEARTBEAT_MS: '500' } })));
afterAll(() => t.close());

/** One write through the interface: its status, and the record's id after a create. */
async function write(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; id?: string }> {
  const res = await fetch(`${t.baseUrl}/v1/${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: Record<string, { id: string }> };
  return { status: res.status, id: res.status === 201 ? Object.values(json.data!)[0].id : undefined };
}

const createBody = (resource: Resource, n: string) =>
  resource === 'customers'
    ? { name: `Customer ${n}`, email: `${n}@feed.example`, company: `Co ${n}` }
    : { name: `Shop ${n}`, slug: uid('feedshop'), address: `${n} Main St` };
const updateBody = (resource: Resource, n: string) =>
  resource === 'customers' ? { name: `Renamed ${n}`, address: `${n} High St` } : { name: `Shop renamed ${n}`, description: `About ${n}` };

/** The history of a record (one page: the property test's records have fewer than 100 events). */
async function historyOf(token: string, source: string, id: string): Promise<Record<string, unknown>[]> {
  const res = await fetch(`${t.baseUrl}${source}/${id}/history?limit=100`, { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: Record<string, unknown>[] }).data;
}

/** `CustomerCreated` for `customer.created`: the history's event for a feed entry's type. */
const eventTypeOf = (type: string) =>
  type
    .split('.')
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');

/** `customer.created` for the stored event `CustomerCreated` of `customer-<id>`. */
const entryTypeOf = (streamId: string, eventType: string) => `${streamId.split('-')[0]}.${eventType.replace(/^(Customer|Profile)/, '').toLowerCase()}`;
const recordIdOfStream = (streamId: string) => streamId.replace(/^[a-z]+-/, '');

describe('a consumer following the feed while writers write, killed and resumed', () => {
  /** What the consumer keeps between its runs (its "file"): its copy and its cursor, saved together after each entry or page. */
  const saved = { copy: new FeedCopy(), cursor: undefined as string | undefined };
  /** The entry ids each uninterrupted read saw, in order. */
  const reads: string[][] = [];

  /** Follows by long-polling small pages until killed: a page in flight when killed is lost, as in a crash. */
  async function followByPages(killed: AbortSignal): Promise<void> {
    const seen: string[] = [];
    reads.push(seen);
    while (!killed.aborted) {
      let page;
      try {
        page = await readPage(t.baseUrl, FOLLOWED.token, { after: saved.cursor, limit: randomInt(1, 8), wait: 1, signal: killed });
      } catch (error) {
        if (killed.aborted) return;
        throw error;
      }
      expect(page.status).toBe(200);
      for (const entry of page.entries) {
        saved.copy.apply(entry);
        seen.push(entry.id);
      }
      saved.cursor = page.cursor;
    }
  }

  /** Follows as server-sent events from Last-Event-ID until killed: the connection is dropped, mid-event or not. */
  async function followByStream(killed: AbortSignal): Promise<void> {
    const seen: string[] = [];
    reads.push(seen);
    const stream: FeedStream = await openFeedStream(t.baseUrl, FOLLOWED.token, {
      lastEventId: saved.cursor,
      onEntry: (entry) => {
        if (killed.aborted) return;
        saved.copy.apply(entry);
        seen.push(entry.id);
        saved.cursor = entry.id;
      },
    });
    expect(stream.status).toBe(200);
    await new Promise<void>((resolve) => {
      if (killed.aborted) resolve();
      killed.addEventListener('abort', () => resolve(), { once: true });
      // A stream the service ended (it never should here) fails the check below.
      void stream.ended.then(() => resolve());
    });
    expect(killed.aborted).toBe(true);
    stream.close();
  }

  /** Creates, updates, deletes and erases records of both kinds at random, `count` writes; adds what it erased to `erased`. */
  async function writer(w: number, count: number, erased: string[]): Promise<void> {
    const live: { resource: Resource; id: string }[] = [];
    for (let n = 0; n < count; n++) {
      const roll = randomInt(10);
      const target = live.length > 0 ? live[randomInt(live.length)] : undefined;
      if (!target || roll < 4) {
        const resource = RESOURCES[randomInt(2)];
        const created = await write(FOLLOWED.token, 'POST', resource, createBody(resource, `w${w}n${n}`));
        expect(created.status).toBe(201);
        live.push({ resource, id: created.id! });
      } else if (roll < 7) {
        expect((await write(FOLLOWED.token, 'PUT', `${target.resource}/${target.id}`, updateBody(target.resource, `w${w}n${n}`))).status).toBe(200);
      } else {
        const erase = roll === 9;
        const path = `${target.resource}/${target.id}`;
        const res = erase ? await write(FOLLOWED.token, 'POST', `${path}/erase`) : await write(FOLLOWED.token, 'DELETE', path);
        expect(res.status).toBe(200);
        live.splice(live.indexOf(target), 1);
        if (erase) erased.push(`/v1/${target.resource} ${target.id}`);
      }
    }
  }

  it('ends with a copy equal to the lists and no erased record, having seen every entry once per read, in the stored order', async () => {
    const erased: string[] = [];
    let writing = true;
    const writers = Promise.all([0, 1, 2].map((w) => writer(w, 50, erased))).finally(() => (writing = false));

    // The consumer: runs of either kind, each killed after a while; once the writers are done (and
    // it has run five times), it follows until it has the whole feed.
    let runs = 0;
    for (;;) {
      const kill = new AbortController();
      const timer = setTimeout(() => kill.abort(), randomInt(50, 400));
      await (runs++ % 2 ? followByStream(kill.signal) : followByPages(kill.signal));
      clearTimeout(timer);
      // At least five runs, however fast the writers are: it must be killed and resumed several times.
      if (!writing && runs >= 5) {
        const { entries } = await readFeed(t.baseUrl, FOLLOWED.token);
        if (entries.length > 0 && saved.cursor === entries[entries.length - 1].id) break;
      }
    }
    await writers;
    expect(runs).toBeGreaterThan(4);

    // Every entry once per uninterrupted read, and the reads joined are the whole feed, in the stored order.
    const { entries } = await readFeed(t.baseUrl, FOLLOWED.token);
    expect(entries).toHaveLength(150);
    for (const read of reads) expect(new Set(read).size).toBe(read.length);
    expect(reads.flat()).toEqual(entries.map((e) => e.id));
    const stored = await storedOrder(t.events, FOLLOWED.account);
    expect(entries.map((e) => `${e.subject}@${e.data.revision}`)).toEqual(stored.map((e) => `${recordIdOfStream(e.streamId)}@${e.revision}`));

    // The copy is what the service lists, and holds no erased record.
    for (const resource of RESOURCES) {
      const listed = await listAll(t.baseUrl, FOLLOWED.token, resource);
      expect(asListed(resource, saved.copy.of(resource))).toEqual(listed);
    }
    expect(erased.length).toBeGreaterThan(0);
    expect([...saved.copy.erased].sort()).toEqual([...erased].sort());
    for (const key of erased) expect(saved.copy.records.has(key)).toBe(false);
  }, 120_000);
});

describe('the feed against every record’s history (property)', () => {
  type Op = { op: 'create'; resource: Resource; name: string } | { op: 'update' | 'delete' | 'erase'; target: number; name: string | null };
  const name = fc.stringMatching(/^[A-Za-z][A-Za-z .'-]{0,15}$/);
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('create' as const), resource: fc.constantFrom(...RESOURCES), name }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('update' as const), target: fc.nat(), name: fc.option(name, { freq: 4 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('delete' as const, 'erase' as const), target: fc.nat(), name: fc.constant(null) }) },
  );

  it('tells each record’s entries as its history does, in the order the store keeps the events', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), async (ops) => {
        // Each run writes into an account of its own, so the account's feed is the run's writes alone.
        const { token, account } = propertyAccount(run++ % PROPERTY_ACCOUNTS);
        const records: { resource: Resource; id: string }[] = [];
        for (const [n, o] of ops.entries()) {
          if (o.op === 'create') {
            const body = o.resource === 'customers' ? { name: o.name, email: `p${n}@feed.example` } : { name: o.name };
            const created = await write(token, 'POST', o.resource, body);
            expect(created.status).toBe(201);
            records.push({ resource: o.resource, id: created.id! });
            continue;
          }
          if (records.length === 0) continue;
          const { resource, id } = records[o.target % records.length];
          const path = `${resource}/${id}`;
          const res =
            o.op === 'update'
              ? await write(token, 'PUT', path, { name: o.name })
              : o.op === 'delete'
                ? await write(token, 'DELETE', path)
                : await write(token, 'POST', `${path}/erase`);
          // A deleted record is gone: 404 (an erasure of an erased one is 200, and stores nothing).
          expect([200, 404]).toContain(res.status);
        }

        // Read in small pages, so that records' entries are split across pages (each page folds a record from before its first entry).
        const { entries } = await readFeed(t.baseUrl, token, undefined, 3);
        // Every event of the account's records, each once, in the store's order (the store's own read of $all).
        expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
        const stored = await storedOrder(t.events, account);
        expect(entries.map((e) => [e.subject, e.data.revision, e.type])).toEqual(
          stored.map((e) => [recordIdOfStream(e.streamId), e.revision, entryTypeOf(e.streamId, e.type)]),
        );
        for (const { resource, id } of records) {
          const told = entries.filter((e) => e.subject === id);
          expect(told.every((e) => e.source === `/v1/${resource}`)).toBe(true);
          const history = await historyOf(token, `/v1/${resource}`, id);
          expect(told.map((e: FeedEntry) => ({ event: eventTypeOf(e.type), revision: e.data.revision, occurred: e.time, changes: e.data.changes }))).toEqual(
            history.map((h) => ({ event: h.event, revision: h.revision, occurred: h.occurred, changes: h.changes })),
          );
          // An erased record's erasure is its last entry, and nothing before it holds a value.
          const erasure = told.findIndex((e) => e.type.endsWith('.erased'));
          if (erasure >= 0) {
            expect(erasure).toBe(told.length - 1);
            expect(told.flatMap((e) => Object.values(e.data.changes)).every((change) => change === null)).toBe(true);
          }
        }
      }),
      { numRuns: PROPERTY_RUNS },
    );
  }, 120_000);
});

describe('another account', () => {
  it('never sees the entries, counts or cursors of the first, and its cursors are 400 across accounts', async () => {
    const mine = await write(STRANGER.token, 'POST', 'customers', { name: 'Stranger', email: 'stranger@feed.example' });
    expect(mine.status).toBe(201);
    const before = await readFeed(t.baseUrl, STRANGER.token);
    expect(before.entries.map((e) => [e.type, e.subject])).toEqual([['customer.created', mine.id]]);
    const startCursor = (await readPage(t.baseUrl, STRANGER.token, { limit: 1 })).cursor;

    // The stranger waits at its end, long-polling and streaming, while the followed account writes: nothing reaches it.
    const polled = readPage(t.baseUrl, STRANGER.token, { after: before.cursor, wait: 2 });
    const stream = await openFeedStream(t.baseUrl, STRANGER.token, { lastEventId: before.cursor });
    const written: string[] = [];
    for (let n = 0; n < 6; n++) written.push((await write(FOLLOWED.token, 'POST', 'customers', { email: `tenant${n}@feed.example` })).id!);
    const page = await polled;
    expect(page.status).toBe(200);
    expect(page.entries).toEqual([]);
    expect(page.cursor).toBe(before.cursor);
    expect(await stream.until(() => stream.text().includes(': idle'), 5_000)).toBe(true);
    expect(stream.entries).toEqual([]);
    stream.close();

    // Its whole feed, its cursors and its entries' ids are as they were: the other account's writes moved none of them.
    expect(await readFeed(t.baseUrl, STRANGER.token)).toEqual(before);
    expect((await readPage(t.baseUrl, STRANGER.token, { limit: 1 })).cursor).toBe(startCursor);
    const followed = await readFeed(t.baseUrl, FOLLOWED.token);
    expect(followed.entries.map((e) => e.subject)).toEqual(expect.arrayContaining(written));
    expect(followed.entries.some((e) => e.subject === mine.id)).toBe(false);
    expect(followed.entries.some((e) => before.entries.some((b) => b.id === e.id))).toBe(false);

    // The followed account's cursors (a page's, an entry's) are 400 for the stranger, as after and as Last-Event-ID; and the other way round.
    for (const cursor of [followed.cursor, followed.entries[0].id]) {
      const res = await readPage(t.baseUrl, STRANGER.token, { after: cursor });
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain('"field":"after"');
      const sse = await fetch(`${t.baseUrl}/v1/events`, {
        headers: { Authorization: `Bearer ${STRANGER.token}`, Accept: 'text/event-stream', 'Last-Event-ID': cursor },
      });
      expect(sse.status).toBe(400);
      expect(JSON.stringify(await sse.json())).toContain('"field":"Last-Event-ID"');
    }
    expect((await readPage(t.baseUrl, FOLLOWED.token, { after: before.cursor })).status).toBe(400);
  }, 60_000);
});
