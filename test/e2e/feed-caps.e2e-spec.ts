/**
 * The change feed's requests that stay open, event streams and long-polls, capped per access token
 * and per account far below MAX_CONNECTIONS (issue 55): a token that opens streams as fast as it can
 * takes no connection from another account, gets 429 naming the cap, and each stream or long-poll
 * that closes, whichever way, frees its slot. Over real sockets, the slots counted by /metrics.
 */
import { Metrics } from '../../src/metrics/metrics';
import { FeedStream, openFeedStream } from '../support/feed-client';
import { expectError, uniqueEmail } from '../support/http-assertions';
import { describeUnlessWorkers } from '../support/stores';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

const PER_PROCESS = 'the caps count in one process: with WORKERS each worker allows its share of them, as MAX_CONNECTIONS';
const TOKEN_FULL = 'This access token has 2 change-feed event streams or long-polls open, the most allowed at once: close one before opening another.';
const ACCOUNT_FULL =
  'This account has 3 change-feed event streams or long-polls open over its access tokens, the most allowed at once: close one before opening another.';

describeUnlessWorkers("the change feed's streams and long-polls, capped per token and per account", PER_PROCESS, () => {
  let t: TestApp;
  // The account's cap is left to its default, an eighth of MAX_CONNECTIONS: 3.
  beforeAll(async () => (t = await startTestApp({ env: { MAX_CONNECTIONS: '24', FEED_STREAMS_PER_TOKEN: '2', FEED_HEARTBEAT_MS: '500' } })));
  afterAll(() => t?.close());

  const streams: FeedStream[] = [];
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    if (t) await untilOpen(0); // else closed by the test
  });

  /** GET /v1/events as a stream, kept open until the test ends (or closed by it). */
  async function stream(token: string): Promise<FeedStream> {
    const opened = await openFeedStream(t.baseUrl, token);
    streams.push(opened);
    return opened;
  }

  /** A stream the service refused: its status, Retry-After, Content-Type and body. */
  async function refused(token: string) {
    const answer = await stream(token);
    await answer.ended;
    return { status: answer.status, retryAfter: answer.headers['retry-after'], type: answer.headers['content-type'], body: JSON.parse(answer.text()) };
  }

  /** feed_open_requests, as /metrics counts the slots held. */
  async function openNow(): Promise<number> {
    const { text } = await t.http.get('/metrics').expect(200);
    return Number(/^feed_open_requests\{[^}]*\} (\d+)$/m.exec(text)![1]);
  }

  /** Waits until `count` slots are held (a close reaches the service a moment after the client's). */
  async function untilOpen(count: number): Promise<void> {
    for (let tries = 0; (await openNow()) !== count; tries++) {
      if (tries > 200) throw new Error(`feed_open_requests stayed at ${await openNow()}, not ${count}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it("leaves another account its connections while one token opens streams past every connection there is, answering 429 naming the token's cap", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const answer = await stream(TOKENS.a);
      statuses.push(answer.status);
      if (answer.status !== 200) await answer.ended;
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.slice(2).every((s) => s === 429)).toBe(true);
    expect(await refused(TOKENS.a)).toEqual({
      status: 429,
      retryAfter: '5',
      type: JSON_CT,
      body: { success: false, status: 429, error: { code: 'RATE_LIMITED', message: TOKEN_FULL } },
    });
    // A long-poll holds a slot as a stream does; a page that answers at once does not.
    const longPoll = await t.http.get(withToken('events?wait=5'));
    expectError(longPoll, 429, 'RATE_LIMITED');
    expect(longPoll.body.error.message).toBe(TOKEN_FULL);
    await t.http.get(withToken('events')).expect(200);

    // Another account reads, lists and streams as if nothing were open.
    await t.http.get(withToken('customers', TOKENS.b)).expect(200);
    expect((await stream(TOKENS.b)).status).toBe(200);
    await untilOpen(3);
  });

  it('caps an account over all its tokens', async () => {
    for (const token of [TOKENS.a, TOKENS.a, TOKENS.a2]) expect((await stream(token)).status).toBe(200);
    expect(await refused(TOKENS.a2)).toMatchObject({ status: 429, body: { error: { code: 'RATE_LIMITED', message: ACCOUNT_FULL } } });
    expectError(await t.http.get(withToken('events?wait=5', TOKENS.a2)), 429, 'RATE_LIMITED');
    expect((await stream(TOKENS.b)).status).toBe(200);
    await untilOpen(4);
  });

  it('frees a slot as a stream or a long-poll closes, whether the consumer leaves or it is answered', async () => {
    const [first] = [await stream(TOKENS.a), await stream(TOKENS.a)];
    expect((await stream(TOKENS.a)).status).toBe(429);
    await untilOpen(2);
    first.close();
    await untilOpen(1);
    expect((await stream(TOKENS.a)).status).toBe(200);
    await untilOpen(2);

    // The account's third slot: a long-poll of its other token, which the consumer abandons.
    const cursor = (await t.http.get(withToken('events?limit=1000', TOKENS.a2)).expect(200)).headers['x-next-cursor'];
    const abandoned = t.http.get(withToken(`events?after=${cursor}&wait=30`, TOKENS.a2));
    const gone = abandoned.then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await untilOpen(3);
    expectError(await t.http.get(withToken('events?wait=5', TOKENS.a2)), 429, 'RATE_LIMITED');
    abandoned.abort();
    await untilOpen(2);
    expect(await gone).not.toBe('answered');

    // A long-poll answered by news frees its slot too.
    const answered = t.http.get(withToken(`events?after=${cursor}&wait=30`, TOKENS.a2)).then((res) => res);
    await untilOpen(3);
    await t.http.post(withToken('customers')).send({ email: uniqueEmail(), name: 'News' }).expect(201);
    expect((await answered).body.data.map((e: { type: string }) => e.type)).toEqual(['customer.created']);
    await untilOpen(2);
  });

  it('frees the slots of the streams it ends as it shuts down', async () => {
    for (const token of [TOKENS.a, TOKENS.a, TOKENS.b]) expect((await stream(token)).status).toBe(200);
    await untilOpen(3);
    const metrics = t.app.get(Metrics);
    await t.close();
    await Promise.all(streams.map((s) => s.ended));
    expect((await metrics.feedOpen.get()).values.map((v) => v.value)).toEqual([0]);
    streams.length = 0;
    t = undefined!;
  });
});
