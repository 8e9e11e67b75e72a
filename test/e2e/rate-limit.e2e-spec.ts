import { expectError } from '../support/http-assertions';
import { describeUnlessWorkers } from '../support/stores';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

const PER_PROCESS = 'they count requests in one process: with WORKERS each worker allows its share, which several-instances.e2e-spec.ts checks';

describeUnlessWorkers('rate limits per access token', PER_PROCESS, () => {
  let app: TestApp;
  beforeAll(async () => (app = await startTestApp({ env: { RATE_LIMIT_REQUESTS: '3', RATE_LIMIT_WINDOW_SECONDS: '60' } })));
  afterAll(() => app.close());

  it('answers 429 RATE_LIMITED with Retry-After once a token has used its requests, and only for that token', async () => {
    const { http } = app;
    await http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@example.com' }).expect(201);
    await http.get(withToken('customers')).expect(200);
    await http.get('/v1/profiles').set('Authorization', `Bearer ${TOKENS.a}`).expect(200);

    const limited = await http.get(withToken('customers'));
    expectError(limited, 429, 'RATE_LIMITED');
    expect(limited.body.error.message).toMatch(/at most 3 per 60 s/);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.headers['x-request-id']).toBeTruthy();
    // Whichever way the token is sent, and whatever the operation.
    expectError(await http.post('/v1/customers').set('Authorization', `Bearer ${TOKENS.a}`).send({ name: 'X', email: 'x@example.com' }), 429, 'RATE_LIMITED');

    // Another token, even of the same account, has its own allowance.
    await http.get(withToken('customers', TOKENS.a2)).expect(200);
    await http.get(withToken('customers', TOKENS.b)).expect(200);
    // Unknown tokens are refused as before, and /metrics is not limited.
    expectError(await http.get(withToken('customers', 'no-such-token')), 401, 'UNAUTHORIZED');
    for (let i = 0; i < 5; i++) await http.get('/metrics').expect(200);
  });
});

describeUnlessWorkers('a rate-limited token', PER_PROCESS, () => {
  it('is served again once Retry-After has passed', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_REQUESTS: '1', RATE_LIMIT_WINDOW_SECONDS: '1' } });
    try {
      await app.http.get(withToken('customers')).expect(200);
      const limited = await app.http.get(withToken('customers')).expect(429);
      await new Promise((r) => setTimeout(r, Number(limited.headers['retry-after']) * 1000 + 200));
      await app.http.get(withToken('customers')).expect(200);
    } finally {
      await app.close();
    }
  });
});

describe('RATE_LIMIT_REQUESTS=0', () => {
  // Handed to the limiter as a limit, 0 would refuse every request.
  it('turns the limit off', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_REQUESTS: '0' } });
    try {
      for (let i = 0; i < 5; i++) await app.http.get(withToken('customers')).expect(200);
    } finally {
      await app.close();
    }
  });
});

describe('security headers', () => {
  let app: TestApp;
  beforeAll(async () => (app = await startTestApp()));
  afterAll(() => app.close());

  it.each([
    ['a read', () => app.http.get(withToken('customers')), 200],
    ['a write', () => app.http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@example.com' }), 201],
    ['an error', () => app.http.get('/v1/customers'), 401],
    ['an unknown path', () => app.http.get('/nowhere'), 404],
  ])('are on %s, and leave the JSON content type as it was', async (_, send, status) => {
    const res = await send();
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.headers).toMatchObject({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'strict-transport-security': expect.stringMatching(/^max-age=\d+/),
      'content-security-policy': expect.stringContaining("default-src 'self'"),
      'referrer-policy': 'no-referrer',
    });
    expect(res.headers['x-powered-by']).toBeUndefined();
  });
});
