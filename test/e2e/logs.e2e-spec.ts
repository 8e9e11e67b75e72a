import { rmSync } from 'node:fs';
import request from 'supertest';
import { ChildService, startChildService } from '../support/child-service';
import { uid } from '../support/http-assertions';
import { READ_MODELS } from '../../src/read-models';
import { TEST_WORKERS } from '../support/stores';
import { makeDataDir } from '../support/test-app';

/** The processes that serve: with TEST_WORKERS, each worker logs its own start (the primary adds a line or two). */
const SERVING = TEST_WORKERS || 1;

// Tokens that appear nowhere else, so finding one in the output can only mean it leaked.
const QUERY_TOKEN = 'QueryTok3nZq81';
const BEARER_TOKEN = 'BearerTok3nWx42';
const WRONG_TOKEN = 'WrongTok3nKp77';
const SECRETS = [QUERY_TOKEN, BEARER_TOKEN, WRONG_TOKEN];
const ACCESS_TOKENS = `${QUERY_TOKEN}:acme,${BEARER_TOKEN}:acme`;

interface LogLine {
  level: number;
  time: string;
  msg: string;
  context?: string;
  requestId?: string;
  req?: { method: string; url: string; headers: Record<string, string> };
  res?: { statusCode: number; error?: { code: string; fields?: string[] } };
}

const lines = (child: ChildService): LogLine[] =>
  child
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as LogLine);

/** Requests that carry a token in every way a client can, on answers from 200 to 415. */
async function traffic(url: string): Promise<{ requestId: string; status: number }[]> {
  const q = (path: string, token = QUERY_TOKEN) => `${path}${path.includes('?') ? '&' : '?'}access_token=${token}`;
  const bearer = { Authorization: `Bearer ${BEARER_TOKEN}` };
  const sent = [
    request(url).post(q('/v1/customers')).send({ name: 'Ada', email: 'ada@example.com' }),
    request(url).get(q('/v1/customers?limit=5')),
    request(url).get('/v1/customers').set(bearer),
    request(url)
      .post('/v1/profiles')
      .set(bearer)
      .send({ name: 'Shop', slug: uid('logshop') }),
    request(url).get(q('/v1/customers', WRONG_TOKEN)),
    request(url)
      .get('/v1/customers')
      .set({ Authorization: `Bearer ${WRONG_TOKEN}` }),
    request(url).get(`/v1/customers?acc%65ss_token=${QUERY_TOKEN}`),
    request(url).get(q('/v1/customers/00000000-0000-4000-8000-000000000000')),
    request(url).get('/v1/no-such-route').set(bearer),
    request(url).get(q('/no-such-route')),
    request(url).post(q('/v1/customers')).send({ name: 'No contact' }),
    request(url).post('/v1/customers').set(bearer).set('Content-Type', 'application/json').send('{"name": '),
    request(url).post(q('/v1/customers')).set('Content-Type', 'text/plain').send('hello'),
    request(url)
      .post(q('/v1/customers'))
      .send({ name: 'x'.repeat(70_000), email: 'big@example.com' }),
  ];
  const answers = [];
  for (const req of sent) {
    const res = await req;
    answers.push({ requestId: res.headers['x-request-id'], status: res.status });
  }
  return answers;
}

describe('logs', () => {
  let dataDir: string;
  beforeEach(() => (dataDir = makeDataDir()));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('are JSON lines, one per request at info with its request id, and never hold an access token', async () => {
    const started = Date.now();
    const child = await startChildService(dataDir, { ACCESS_TOKENS, LOG_LEVEL: 'info' });
    const answers = await traffic(child.url);
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200, 201, 400, 401, 404, 413, 415]));
    const beforeTagged = Date.now();
    const tagged = await request(child.url).get(`/v1/customers?access_token=${QUERY_TOKEN}`).set('X-Request-Id', 'log-test-req-1');
    answers.push({ requestId: 'log-test-req-1', status: tagged.status });
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);

    const ended = Date.now();
    for (const secret of SECRETS) expect(child.output()).not.toContain(secret);
    const logged = lines(child);
    for (const { requestId, status } of answers) {
      const mine = logged.filter((l) => l.requestId === requestId);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ level: 30, res: { statusCode: status } });
      // The time of the line, to the millisecond, as ISO 8601 in UTC.
      expect(mine[0].time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(mine[0].time)).toBeGreaterThanOrEqual(started);
      expect(Date.parse(mine[0].time)).toBeLessThanOrEqual(ended);
    }
    const bearerLine = logged.find((l) => l.req?.url === '/v1/customers' && l.req.headers.authorization);
    expect(bearerLine?.req?.headers.authorization).toBe('[REDACTED]');
    expect(logged.find((l) => l.requestId === 'log-test-req-1')?.req?.url).toBe('/v1/customers?access_token=[REDACTED]');
    // Each line's own time, not one kept from an earlier line.
    expect(Date.parse(logged.find((l) => l.requestId === 'log-test-req-1')!.time)).toBeGreaterThanOrEqual(beforeTagged);
    expect(logged.some((l) => /^Listening on /.test(l.msg))).toBe(true);
  });

  it('say why a request failed: the error code and the faulty fields, never their values, nor filter values', async () => {
    const child = await startChildService(dataDir, { ACCESS_TOKENS, LOG_LEVEL: 'info' });
    const refused = await request(child.url).post(`/v1/customers?access_token=${QUERY_TOKEN}`).send({ name: 'Ada', mobile: '0912345', tel: 'secret-value-77' });
    const unknown = await request(child.url).get('/v1/customers').set('Authorization', `Bearer ${WRONG_TOKEN}`);
    const fine = await request(child.url).get(`/v1/customers?access_token=${QUERY_TOKEN}`);
    const filtered = await request(child.url).get(`/v1/customers?email=ada%40private.example&mobile=09120000777&limit=5&access_token=${QUERY_TOKEN}`);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);

    const lineOf = (res: request.Response) => lines(child).find((l) => l.requestId === res.headers['x-request-id']);
    expect(lineOf(refused)).toMatchObject({
      msg: 'POST /v1/customers?access_token=[REDACTED] 400 VALIDATION_FAILED mobile, tel',
      res: { statusCode: 400, error: { code: 'VALIDATION_FAILED', fields: ['mobile', 'tel'] } },
    });
    expect(lineOf(unknown)).toMatchObject({ msg: 'GET /v1/customers 401 UNAUTHORIZED', res: { statusCode: 401, error: { code: 'UNAUTHORIZED' } } });
    expect(lineOf(fine)).toMatchObject({ msg: 'GET /v1/customers?access_token=[REDACTED] 200', res: { statusCode: 200 } });
    expect(lineOf(fine)?.res).not.toHaveProperty('error');
    expect(child.output()).not.toContain('secret-value-77');
    expect(child.output()).not.toContain('0912345');
    // Filter values are personal data that an erasure could not reach in a log: only their names are kept.
    expect(lineOf(filtered)).toMatchObject({ msg: 'GET /v1/customers?email=[REDACTED]&mobile=[REDACTED]&limit=5&access_token=[REDACTED] 200' });
    expect(child.output()).not.toContain('private.example');
    expect(child.output()).not.toContain('09120000777');
  });

  it('start with a few lines, not one per route', async () => {
    const child = await startChildService(dataDir, { ACCESS_TOKENS, LOG_LEVEL: 'info' });
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    const atStart = lines(child).filter((l) => !/^Shutting down|^Stopped/.test(l.msg));
    expect(atStart.filter((l) => /^Mapped \{/.test(l.msg) || l.context === 'RouterExplorer')).toEqual([]);
    expect(atStart.map((l) => l.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/^Listening on http:\/\/127\.0\.0\.1:\d+ \(data in /)]));
    // Nest's two, where it listens, a line per read model saying whether this worker folds it, and
    // one per process saying how its memory is sized (the primary's too, with WORKERS).
    expect(atStart.length).toBeLessThanOrEqual((4 + READ_MODELS.length) * SERVING + (SERVING > 1 ? 1 : 0));
  });

  it('say the server is bound to every interface when no HOST chooses one', async () => {
    const child = await startChildService(dataDir, { ACCESS_TOKENS, LOG_LEVEL: 'info', HOST: '' });
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    const listening = lines(child).filter((l) => /^Listening on /.test(l.msg));
    expect(listening.map((l) => l.msg)).toEqual(
      Array(SERVING).fill(
        expect.stringMatching(/^Listening on http:\/\/localhost:\d+, bound to every interface \(HOST=127\.0\.0\.1 keeps it to this machine\) \(data in /),
      ),
    );
  });

  it('have no line per request at LOG_LEVEL=warn', async () => {
    // PORT 0: the service says where it listens even at warn, and no port picked beforehand can be taken meanwhile.
    const child = await startChildService(dataDir, { ACCESS_TOKENS, LOG_LEVEL: 'warn', PORT: '0' });
    await traffic(child.url);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(lines(child).filter((l) => l.req !== undefined || l.requestId !== undefined)).toEqual([]);
    for (const secret of SECRETS) expect(child.output()).not.toContain(secret);
    // The one start-up line kept at warn: where the service listens (each worker's, with WORKERS).
    const listening = expect.objectContaining({
      level: 40,
      msg: expect.stringMatching(new RegExp(`^Listening on http://127\\.0\\.0\\.1:${new URL(child.url).port} `)),
    });
    expect(lines(child).filter((l) => /^Listening on /.test(l.msg))).toEqual(Array(SERVING).fill(listening));
  });
});
