import { rawRequest } from '../support/raw-http';
import { startTestApp, TestApp, TOKENS } from '../support/test-app';

const ALLOWED = 'https://app.example.com';

/** A browser's preflight before a cross-origin PUT with the token in a header and an If-Match. */
const preflight = (app: TestApp, origin: string) =>
  rawRequest(app.baseUrl, {
    method: 'OPTIONS',
    path: '/v1/customers/00000000-0000-4000-8000-000000000000',
    headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization, content-type, if-match' },
  });

const get = (app: TestApp, origin: string) =>
  rawRequest(app.baseUrl, { method: 'GET', path: '/v1/customers', headers: { origin, authorization: `Bearer ${TOKENS.a}` } });

describe('CORS', () => {
  describe('with CORS_ORIGINS set', () => {
    let app: TestApp;
    beforeAll(async () => (app = await startTestApp({ env: { CORS_ORIGINS: `${ALLOWED},http://localhost:5173` } })));
    afterAll(() => app.close());

    it('answers a preflight from an allowed origin without a token', async () => {
      const res = await preflight(app, ALLOWED);
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(res.headers['access-control-allow-methods']).toBe('GET,POST,PUT,DELETE');
      expect(res.headers['access-control-allow-headers']).toBe('Authorization,Content-Type,If-Match,Idempotency-Key,X-Request-Id,Last-Event-ID');
      expect(res.headers['access-control-max-age']).toBe('600');
    });

    it("lets an allowed origin's page read the answer and the headers clients need", async () => {
      const res = await get(app, ALLOWED);
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(res.headers['access-control-expose-headers']).toBe('ETag,X-Total-Count,X-Total-Count-Capped,X-Next-Cursor,X-Request-Id,Retry-After');
    });

    it('gives another origin no CORS header, so its browser keeps the answer from the page', async () => {
      const pre = await preflight(app, 'https://evil.example');
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
      const res = await get(app, 'https://evil.example');
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('still asks a real request for its token', async () => {
      const res = await rawRequest(app.baseUrl, { method: 'GET', path: '/v1/customers', headers: { origin: ALLOWED } });
      expect(res.status).toBe(401);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    });
  });

  describe('by default', () => {
    let app: TestApp;
    beforeAll(async () => (app = await startTestApp()));
    afterAll(() => app.close());

    it('allows no origin: a preflight is refused like any request without a token', async () => {
      const pre = await preflight(app, ALLOWED);
      expect(pre.status).toBe(401);
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
      const res = await get(app, ALLOWED);
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });
  });
});
