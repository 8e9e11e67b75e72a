/**
 * The HTTP edge under attack, over real sockets against the built service in a child process: what
 * an outside attack run found getting past the limits (issue 14), each kept closed here. Rate limits
 * apply before any body is read; queries past Node's parameter limit are refused; what Node refuses
 * on its own comes in the envelope and is logged; no token reaches the log by any header; slow
 * clients are cut off and connections capped; oversized bodies are refused on their declared length;
 * `details` is bounded; the data files are the service's user's alone.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { ChildService, startChildService } from '../support/child-service';
import { jsonRequest, parseAnswer, RawResponse, rawRequest, socketExchange } from '../support/raw-http';
import { describeUnlessWorkers } from '../support/stores';
import { JSON_CT, makeDataDir, TOKENS } from '../support/test-app';

const TIMEOUT_MS = 60_000;
jest.setTimeout(TIMEOUT_MS);

/** The error envelope, exactly, with the given status and code, and these fields among its details. */
function expectEnvelope(res: RawResponse, status: number, code: string, fields: string[] = []): void {
  expect({ status: res.status, contentType: res.headers['content-type'] }).toEqual({ status, contentType: JSON_CT });
  const body = JSON.parse(res.text);
  expect(body).toEqual({ success: false, status, error: expect.objectContaining({ code, message: expect.any(String) }) });
  expect((body.error.details ?? []).map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(fields));
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('the HTTP edge under attack', () => {
  const dataDir = makeDataDir();
  let service: ChildService;
  beforeAll(async () => {
    service = await startChildService(dataDir, {
      LOG_LEVEL: 'info',
      RATE_LIMIT_REQUESTS: '100000',
      HEADERS_TIMEOUT_MS: '1000',
      REQUEST_TIMEOUT_MS: '2000',
      KEEP_ALIVE_TIMEOUT_MS: '1000',
      MAX_CONNECTIONS: '20',
    });
  }, TIMEOUT_MS);
  afterAll(async () => {
    service.process.kill('SIGTERM');
    await service.exited;
    rmSync(dataDir, { recursive: true, force: true });
  });

  describe('queries', () => {
    const manyParameters = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=1`).join('&');

    it('refuses more than 1,000 parameters, instead of dropping the rest (a filter among them)', async () => {
      const res = await rawRequest(service.url, jsonRequest('GET', `/v1/customers?${manyParameters(1000)}&email=x@example.com`, TOKENS.a));
      expectEnvelope(res, 400, 'VALIDATION_FAILED', ['(query)']);
      expect(JSON.parse(res.text).error.details[0].message).toMatch(/more than 1000 parameters/);
      // 1,000 exactly is still a query.
      expect((await rawRequest(service.url, jsonRequest('GET', `/v1/customers?${manyParameters(999)}&email=x@example.com`, TOKENS.a))).status).toBe(200);
    });

    it.each([
      ['limit=abc', 'limit'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['page=2&offset=10', 'page'],
      ['page=0', 'page'],
      ['offset=-1', 'offset'],
      ['limit=1&limit=2', 'limit'],
    ])('refuses a list with %s, naming %s', async (query, field) => {
      expectEnvelope(await rawRequest(service.url, jsonRequest('GET', `/v1/customers?${query}`, TOKENS.a)), 400, 'VALIDATION_FAILED', [field]);
    });
  });

  describe("what Node's parser refuses", () => {
    const logLines = () =>
      service
        .output()
        .split('\n')
        .filter((l) => l.includes('Refused a request Node could not take'));
    /**
     * The refusal lines once one more than `before` has been written, and a moment after, so that a
     * second one would show. Log lines are written in batches (at least every 200 ms), later on a
     * busy machine: polled, not a fixed wait, so a late line is not counted by the next test.
     */
    const linesAfterOneMore = async (before: number) => {
      const deadline = Date.now() + 10_000;
      while (logLines().length <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      return logLines();
    };

    it.each([
      ['headers past 16 KiB', `GET /v1/customers HTTP/1.1\r\nHost: x\r\nX-Long: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
      ['a query past 16 KiB', `GET /v1/customers?email=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
      [
        'raw non-ASCII bytes in the query',
        Buffer.concat([Buffer.from('GET /v1/customers?name='), Buffer.from('سلام', 'utf8'), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]),
        400,
        'MALFORMED_REQUEST',
      ],
      [
        'raw non-ASCII bytes in the path',
        Buffer.concat([Buffer.from('GET /v1/customers/'), Buffer.from('é', 'utf8'), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]),
        400,
        'MALFORMED_REQUEST',
      ],
      [
        'both Content-Length and chunked framing',
        'POST /v1/customers HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
        'MALFORMED_REQUEST',
      ],
      ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n', 400, 'MALFORMED_REQUEST'],
    ])('answers %s in the envelope, with a log line', async (_, bytes, status, code) => {
      const before = logLines().length;
      const exchange = await socketExchange(service.url, [bytes], { waitMs: 10_000 });
      expect(exchange.closedByServer).toBe(true);
      expectEnvelope(parseAnswer(exchange.received), status, code);
      const lines = await linesAfterOneMore(before);
      expect(lines.length).toBe(before + 1);
      expect(lines.at(-1)).toContain(`"statusCode":${status}`);
    });

    it('closes the connection on a body whose framing breaks after its headers were taken, with a log line', async () => {
      const before = logLines().length;
      const head = `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.a}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const exchange = await socketExchange(service.url, [head, 'zz\r\n'], { gapMs: 200, waitMs: 10_000 });
      expect(exchange.closedByServer).toBe(true);
      const lines = await linesAfterOneMore(before);
      expect(lines.length).toBe(before + 1);
      expect(lines.at(-1)).toContain('HPE_INVALID_CHUNK_SIZE');
    });

    it('answers an unknown Expect with 417 in the envelope, and logs it as a request', async () => {
      const res = await rawRequest(service.url, {
        ...jsonRequest('GET', '/v1/customers', TOKENS.a),
        headers: { ...bearer(TOKENS.a), expect: 'something-else', 'x-request-id': 'expect-417' },
      });
      expectEnvelope(res, 417, 'EXPECTATION_FAILED');
      await service.waitForOutput(/"requestId":"expect-417".*"statusCode":417/);
    });
  });

  describe('bodies', () => {
    it('refuses a declared Content-Length over 64 KiB before reading it, with no 100 Continue', async () => {
      const headers = `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.a}\r\nContent-Type: application/json\r\n`;
      // Nothing of the body is sent: an answer at all means it was refused on its header.
      for (const extra of ['Content-Length: 99999999\r\n', 'Content-Length: 50000000\r\nExpect: 100-continue\r\n']) {
        const exchange = await socketExchange(service.url, [`${headers}${extra}\r\n`], { waitMs: 10_000 });
        expect(exchange.received).not.toContain('100 Continue');
        // And the connection is closed, rather than kept to read and discard the body.
        expect(exchange.closedByServer).toBe(true);
        expectEnvelope(parseAnswer(exchange.received), 413, 'PAYLOAD_TOO_LARGE');
      }
    });

    it('lets a client that sends a body over 64 KiB in full read the 413, rather than meet a reset', async () => {
      // Closed at once, the connection would reset the rest of the body, often before the client
      // read the answer: superagent (as many clients) then fails with EPIPE or ECONNRESET instead of
      // the 413, most times at 1 MB. (Node's own client reads the answer either way.)
      const body = Buffer.from(JSON.stringify({ name: 'x'.repeat(1024 * 1024) }));
      for (let n = 0; n < 10; n++) {
        const res = await request(service.url)
          .post('/v1/customers')
          .set({ authorization: `Bearer ${TOKENS.a}`, 'content-type': 'application/json' })
          // The identity serializer sends the Buffer as it is (superagent's typing says string).
          .serialize((bytes: Buffer) => bytes as unknown as string)
          .send(body);
        expect(res.status).toBe(413);
        expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      }
    });

    it('still sends 100 Continue to a body it will read', async () => {
      const body = JSON.stringify({ name: 'Expecting', email: 'expect@example.com' });
      const head = `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.a}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`;
      const exchange = await socketExchange(service.url, [head, body], { gapMs: 1000, waitMs: 20_000 });
      expect(exchange.received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
      expect(exchange.received).toContain('HTTP/1.1 201 Created');
    });

    it('bounds the details of a body of 6,500 unknown keys', async () => {
      const body = Object.fromEntries(Array.from({ length: 6500 }, (_, i) => [`k${i}`, 1]));
      const res = await rawRequest(service.url, jsonRequest('POST', '/v1/customers', TOKENS.a, body));
      expectEnvelope(res, 400, 'VALIDATION_FAILED', ['k0', '(more)']);
      const { details } = JSON.parse(res.text).error;
      expect(details).toHaveLength(21);
      expect(details[20]).toEqual({ field: '(more)', message: expect.stringMatching(/^64\d\d more faults not listed$/) });
      expect(res.text.length).toBeLessThan(4000);
    });

    it('cuts a long unknown field name short in details', async () => {
      const res = await rawRequest(service.url, jsonRequest('POST', '/v1/customers', TOKENS.a, { ['n'.repeat(60_000)]: 1, email: 'a@example.com' }));
      expectEnvelope(res, 400, 'VALIDATION_FAILED');
      expect(res.text.length).toBeLessThan(1000);
    });
  });

  describe('slow and idle clients', () => {
    it('cuts off a client sending a header line every 300 ms', async () => {
      const lines = ['GET /v1/customers HTTP/1.1\r\n', ...Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: 1\r\n`)];
      const exchange = await socketExchange(service.url, lines, { gapMs: 300, waitMs: 12_000 });
      expect(exchange.closedByServer).toBe(true);
      expect(exchange.ms).toBeLessThan(12_000);
      expectEnvelope(parseAnswer(exchange.received), 408, 'REQUEST_TIMEOUT');
    });

    it('cuts off a client sending its body a byte every 300 ms', async () => {
      const head = `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.a}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;
      const exchange = await socketExchange(service.url, [head, ...Array.from({ length: 40 }, () => ' ')], { gapMs: 300, waitMs: 12_000 });
      expect(exchange.closedByServer).toBe(true);
      expect(exchange.ms).toBeLessThan(12_000);
    });

    it('closes idle and half-open connections, and caps how many are open', async () => {
      // 40 connections that never send a byte, against a cap of 20.
      const exchanges = await Promise.all(Array.from({ length: 40 }, () => socketExchange(service.url, [], { waitMs: 12_000 })));
      expect(exchanges.every((e) => e.closedByServer)).toBe(true);
      // The ones past the cap are closed at once, the others by the headers timeout.
      expect(exchanges.filter((e) => e.ms < 900).length).toBeGreaterThanOrEqual(20);
      // And the service still answers, once it has seen the closed connections go (their close
      // events may come just after the client saw them end; until then the cap still counts them).
      let answer: { status: number } | undefined;
      for (let attempt = 0; !answer && attempt < 20; attempt++) {
        answer = await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.a)).catch(async () => {
          await new Promise((r) => setTimeout(r, 100));
          return undefined;
        });
      }
      expect(answer?.status).toBe(200);
    });
  });

  describe('logs', () => {
    it('keep an allow-list of headers and scrub access_token= from the values they keep', async () => {
      const secret = 'LeakedViaHeader9k';
      const res = await rawRequest(service.url, {
        method: 'GET',
        path: '/v1/customers',
        headers: {
          ...bearer(TOKENS.a),
          'x-request-id': 'header-leak-test',
          'x-original-uri': `/v1/customers?access_token=${secret}`,
          'x-forwarded-uri': `/v1/customers?access_token=${secret}`,
          referer: `https://app.example.com/?access_token=${secret}`,
          'proxy-authorization': `Bearer ${secret}`,
          'user-agent': `curl/8 access_token=${secret}`,
          'x-forwarded-for': `10.0.0.1`,
        },
      });
      expect(res.status).toBe(200);
      const [line] = await service.waitForOutput(/.*"requestId":"header-leak-test".*/);
      const logged = JSON.parse(line).req.headers;
      expect(logged).toEqual({
        host: expect.any(String),
        'user-agent': 'curl/8 access_token=[REDACTED]',
        'x-forwarded-for': '10.0.0.1',
        authorization: '[REDACTED]',
      });
      expect(service.output()).not.toContain(secret);
      for (const token of Object.values(TOKENS)) expect(service.output()).not.toContain(token);
    });
  });
});

describeUnlessWorkers(
  'rate limits before the body',
  'they count requests in one process: with WORKERS each worker allows its share, which several-instances.e2e-spec.ts checks',
  () => {
    it(
      'count every request of a token, and refuse one over its limit without reading its body',
      async () => {
        const dataDir = makeDataDir();
        const service = await startChildService(dataDir, { RATE_LIMIT_REQUESTS: '3', RATE_LIMIT_WINDOW_SECONDS: '60' });
        try {
          // Answers that are not 2xx count as well.
          expect((await rawRequest(service.url, jsonRequest('GET', '/v1/nowhere', TOKENS.a))).status).toBe(404);
          expect((await rawRequest(service.url, { ...jsonRequest('POST', '/v1/customers', TOKENS.a, {}), body: '{"broken' })).status).toBe(400);
          expect((await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.a))).status).toBe(200);
          // Over the limit: a malformed 60 KB body is answered 429, not 400.
          const malformed = await rawRequest(service.url, { ...jsonRequest('POST', '/v1/customers', TOKENS.a, {}), body: `{${'x'.repeat(60_000)}` });
          expectEnvelope(malformed, 429, 'RATE_LIMITED');
          expect(Number(malformed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
          // A body declared and never sent: answered at once, so it was never waited for.
          const head = `POST /v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKENS.a}\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n`;
          expectEnvelope(parseAnswer((await socketExchange(service.url, [head], { waitMs: 10_000 })).received), 429, 'RATE_LIMITED');
          // Another token has its own allowance.
          expect((await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.b))).status).toBe(200);
        } finally {
          service.process.kill('SIGTERM');
          await service.exited;
          rmSync(dataDir, { recursive: true, force: true });
        }
      },
      TIMEOUT_MS,
    );

    it(
      'bound failed authentications per client address: past the bound, the address is refused before any token is looked at',
      async () => {
        const dataDir = makeDataDir();
        const service = await startChildService(dataDir, { RATE_LIMIT_AUTH_FAILURES: '5', RATE_LIMIT_WINDOW_SECONDS: '60' });
        try {
          for (let i = 0; i < 5; i++) {
            expectEnvelope(await rawRequest(service.url, jsonRequest('GET', '/v1/customers', `guess-${i}`)), 401, 'UNAUTHORIZED');
          }
          const refused = await rawRequest(service.url, jsonRequest('GET', '/v1/customers', 'guess-6'));
          expectEnvelope(refused, 429, 'RATE_LIMITED');
          expect(JSON.parse(refused.text).error.message).toMatch(/failed authentications from this address: at most 5 per 60 s/);
          // A right guess now tells nothing either.
          expectEnvelope(await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.a)), 429, 'RATE_LIMITED');
          // Outside /v1 (health, metrics) nothing is limited.
          expect((await rawRequest(service.url, { method: 'GET', path: '/health/live' })).status).toBe(200);
        } finally {
          service.process.kill('SIGTERM');
          await service.exited;
          rmSync(dataDir, { recursive: true, force: true });
        }
      },
      TIMEOUT_MS,
    );
  },
);

describe('data files', () => {
  it(
    'are readable by the service user only: the data directory 0700, the SQLite files and the token 0600',
    async () => {
      const parent = makeDataDir();
      const dataDir = join(parent, 'fresh');
      const service = await startChildService(dataDir, { ACCESS_TOKENS: '' });
      try {
        const mode = (path: string) => statSync(path).mode & 0o777;
        expect(mode(dataDir)).toBe(0o700);
        for (const file of ['service.sqlite', 'service.sqlite-wal', 'service.sqlite-shm', 'access-token'])
          expect([file, mode(join(dataDir, file))]).toEqual([file, 0o600]);
        // The token made on the first start is said to be kept there, and is not printed.
        const token = readFileSync(join(dataDir, 'access-token'), 'utf8').split(':')[0];
        await service.waitForOutput(/kept it in .*access-token/);
        expect(service.output()).not.toContain(token);
      } finally {
        service.process.kill('SIGTERM');
        await service.exited;
        rmSync(parent, { recursive: true, force: true });
      }
    },
    TIMEOUT_MS,
  );
});
