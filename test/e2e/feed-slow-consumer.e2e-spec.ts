/**
 * Slow consumers of the change feed's server-sent events (issue 35, "Load"; src/feed/feed-stream.ts):
 * a consumer that stops reading is cut off, once the bytes held for it pass the bound or its buffer
 * has not drained for two heartbeats, without slowing the others; one that reads is never cut off,
 * however large the entries. Real sockets: the consumer pauses its socket, so the service's writes
 * back up as they would for a consumer that hangs.
 */
import { randomUUID } from 'node:crypto';
import { FeedEntry, FeedStream, openFeedStream, readFeed, readPage } from '../support/feed-client';
import { RUN_SUFFIX } from '../support/stores';
import { startTestApp, TestApp } from '../support/test-app';

// Two heartbeats (4 s) without draining cut a stream off: long enough that a consumer that reads is
// not cut off, and that another consumer's write arrives before the stalled ones are cut off on a
// loaded machine; short enough to see a stalled one go.
const HEARTBEAT_MS = 2_000;
const BIG = { token: 'feed-big', account: `account-feed-big${RUN_SUFFIX}` };
const OTHER = { token: 'feed-other', account: `account-feed-other${RUN_SUFFIX}` };
const ACCOUNTS = new Map([BIG, OTHER].map(({ token, account }) => [token, account]));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let t: TestApp;
// warn: the service logs each stream it cuts off, which the tests wait for.
beforeAll(async () => (t = await startTestApp({ accounts: ACCOUNTS, env: { FEED_HEARTBEAT_MS: String(HEARTBEAT_MS), LOG_LEVEL: 'warn' } })));
afterAll(() => t.close());

async function send(token: string, method: string, path: string, body: unknown): Promise<string> {
  const res = await fetch(`${t.baseUrl}/v1/${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBeLessThan(300);
  return Object.values(((await res.json()) as { data: Record<string, { id: string }> }).data)[0].id;
}

/**
 * Appends, straight into the event store, `records` customers of the account with `updates` updates
 * each, every event changing an address of some 4 KB: each entry of the feed is some 8.5 KB, so a page of
 * the stream (100 entries) stays under the bound on unsent bytes (1 MiB), and the whole feed is far
 * larger than what the sockets' buffers hold. (Written through HTTP, as many would take a minute.)
 */
async function appendCustomers(accountId: string, records: number, updates: number): Promise<void> {
  const address = (n: number, round: number) => `${n}-${round}-`.padEnd(4000, String.fromCharCode(97 + ((n + round) % 26)));
  const event = (type: string, data: Record<string, string>) => ({
    id: randomUUID(),
    type,
    data,
    metadata: { accountId, correlationId: 'slow-consumer', causationId: 'slow-consumer' },
  });
  for (let n = 0; n < records; n++) {
    const events = [event('CustomerCreated', { email: `slow${n}@slow.example`, address: address(n, 0) })];
    for (let round = 1; round <= updates; round++) events.push(event('CustomerUpdated', { address: address(n, round) }));
    await t.events.appendToStream(`customer-${randomUUID()}`, events, 'no_stream');
  }
}

/** How many of BIG's streams the service has cut off for not reading, by its log. */
const cutOffs = () => t.output().split(`Ended an event stream of account ${BIG.account}: the consumer stopped reading`).length - 1;

/**
 * Waits until the service has cut off `count` more of BIG's streams than `before`: when depends on
 * how soon the stalled sockets' buffers fill, which a loaded machine delays.
 */
async function untilCutOff(before: number, count: number): Promise<void> {
  for (let i = 0; i < 600 && cutOffs() < before + count; i++) await sleep(50);
  expect(cutOffs()).toBe(before + count);
}

/** Reads the stream for `ms`; true when the service ended it meanwhile. */
async function endsWithin(stream: FeedStream, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([stream.ended, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
  return stream.isEnded();
}

describe('a slow consumer of the event stream', () => {
  // Every stream a test opens is closed after it, passed or failed: one left open would hold the app's close.
  const opened: FeedStream[] = [];
  const open = async (...args: Parameters<typeof openFeedStream>) => {
    const stream = await openFeedStream(...args);
    opened.push(stream);
    return stream;
  };
  afterEach(() => opened.splice(0).forEach((s) => s.close()));
  let big: FeedEntry[];
  beforeAll(async () => {
    await appendCustomers(BIG.account, 20, 99);
    // The feed's index folds them: wait until it holds all.
    for (let i = 0; i < 600; i++) {
      big = (await readFeed(t.baseUrl, BIG.token)).entries;
      if (big.length >= 2000) break;
      await sleep(50);
    }
    expect(big).toHaveLength(2000);
  }, 60_000);

  it('is cut off once it stops reading, and resumes from its last entry missing nothing', async () => {
    const bytes = big.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
    expect(bytes).toBeGreaterThan(15_000_000); // far more than the sockets' buffers and a page together
    const before = cutOffs();
    const stream = await open(t.baseUrl, BIG.token);
    stream.pause();
    // Its buffer has not drained for two heartbeats: the service gives up on it.
    await untilCutOff(before, 1);
    stream.resume();
    expect(await endsWithin(stream, 5_000)).toBe(true);
    // It got part of the feed only: what the socket held when it was cut off.
    expect(stream.entries.length).toBeLessThan(big.length);
    expect(stream.bytes()).toBeLessThan(bytes);
    expect(stream.entries.map((e) => e.id)).toEqual(big.slice(0, stream.entries.length).map((e) => e.id));

    // Resumed from its last entry (Last-Event-ID), reading this time: the rest, each entry once.
    const resumed = await open(t.baseUrl, BIG.token, { lastEventId: stream.entries.at(-1)?.id });
    expect(await resumed.until(() => stream.entries.length + resumed.entries.length >= big.length)).toBe(true);
    expect([...stream.entries, ...resumed.entries].map((e) => e.id)).toEqual(big.map((e) => e.id));
    resumed.close();
  }, 60_000);

  it('slows no other consumer: while several stall, another account’s long-poll and stream get a write at once', async () => {
    const before = cutOffs();
    // Each paused as soon as it opens: one that read on while the others opened would have its receive
    // buffer grown by the kernel, to where it might hold the whole feed and never back up.
    const stalled = await Promise.all(Array.from({ length: 8 }, () => open(t.baseUrl, BIG.token).then((s) => (s.pause(), s))));
    const start = (await readPage(t.baseUrl, OTHER.token)).cursor;
    const stream = await open(t.baseUrl, OTHER.token, { after: start });
    const polled = readPage(t.baseUrl, OTHER.token, { after: start, wait: 10 });
    await sleep(100);
    const id = await send(OTHER.token, 'POST', 'customers', { email: 'other@slow.example' });
    const page = await polled;
    expect(page.entries.map((e) => e.subject)).toEqual([id]);
    expect(await stream.until(() => stream.entries.length === 1, 5_000)).toBe(true);
    // Before any stalled consumer is cut off (two heartbeats without draining): a service that made
    // the others wait on them would deliver only then.
    expect(cutOffs()).toBe(before);
    stream.close();
    // And each stalled consumer is cut off in its turn.
    await untilCutOff(before, stalled.length);
    for (const s of stalled) s.resume();
    for (const s of stalled) expect(await endsWithin(s, 5_000)).toBe(true);
    for (const s of stalled) expect(s.entries.length).toBeLessThan(big.length);
  }, 60_000);

  it('is never cut off while it reads: one uninterrupted stream brings every entry', async () => {
    const stream = await open(t.baseUrl, BIG.token);
    expect(await stream.until(() => stream.entries.length >= big.length || stream.isEnded(), 20_000)).toBe(true);
    expect({ ended: stream.isEnded(), received: stream.entries.map((e) => e.id) }).toEqual({ ended: false, received: big.map((e) => e.id) });
    stream.close();
  }, 60_000);
});
