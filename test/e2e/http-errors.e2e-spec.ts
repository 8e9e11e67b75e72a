import type { Response } from 'supertest';
import { expectExactError } from '../support/http-assertions';
import { rawRequest } from '../support/raw-http';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

type Method = 'get' | 'post' | 'put' | 'delete';

const UNKNOWN_ID = '6f1c1f9e-8a4b-4c2d-9e3f-0a1b2c3d4e5f';
const UNKNOWN_TOKEN = 'not-a-real-token-9f8e7d';
const KiB = 1024;

/** The ten operations of the interface, with an id that names no record. */
const OPERATIONS: [Method, string][] = [
  ['post', 'profiles'],
  ['get', 'profiles'],
  ['get', `profiles/${UNKNOWN_ID}`],
  ['put', `profiles/${UNKNOWN_ID}`],
  ['delete', `profiles/${UNKNOWN_ID}`],
  ['post', 'customers'],
  ['get', 'customers'],
  ['get', `customers/${UNKNOWN_ID}`],
  ['put', `customers/${UNKNOWN_ID}`],
  ['delete', `customers/${UNKNOWN_ID}`],
];

const hasBody = (method: Method) => method === 'post' || method === 'put';

/** Neither the body nor any header of the response repeats the token. */
function expectNoToken(res: Response, token: string) {
  expect(res.text).not.toContain(token);
  for (const [name, value] of Object.entries(res.headers)) {
    expect(`${name}: ${String(value)}`).not.toContain(token);
  }
}

/** `[[[...]]]` nested `depth` levels. */
const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** `{"a":{"a":...1...}}` nested `depth` levels. */
const nestedObjects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

describe('HTTP error interface', () => {
  let t: TestApp;
  let profileId: string;
  let customerId: string;

  /** A request with the body sent byte for byte (never serialized), under the given Content-Type (none if undefined). */
  const raw = (method: Method, url: string, body: string | Buffer, contentType?: string) => {
    // The identity serializer keeps superagent from JSON-encoding the Buffer (its typing says string).
    const req = t.http[method](url).serialize((bytes: Buffer) => bytes as unknown as string);
    if (contentType !== undefined) req.set('Content-Type', contentType);
    return req.send(Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'));
  };

  beforeAll(async () => {
    t = await startTestApp();
    profileId = (await t.http.post(withToken('profiles')).send({ name: 'Acme' }).expect(201)).body.data.Profile.id;
    customerId = (await t.http.post(withToken('customers')).send({ name: 'Bob', email: 'bob@example.com' }).expect(201)).body.data.Customer.id;
  });
  afterAll(() => t.close());

  describe('Content-Type of every response', () => {
    /** `bodyStatus`: the status in the body when it differs from the HTTP one (update answers 201). */
    const cases: { name: string; send: () => Promise<Response>; status: number; bodyStatus?: number }[] = [
      { name: 'create profile', send: () => t.http.post(withToken('profiles')).send({ name: 'CT' }), status: 201 },
      { name: 'list profiles', send: () => t.http.get(withToken('profiles')), status: 200 },
      { name: 'read profile', send: () => t.http.get(withToken(`profiles/${profileId}`)), status: 200 },
      {
        name: 'update profile',
        send: () => t.http.put(withToken(`profiles/${profileId}`)).send({ description: 'd' }),
        status: 200,
        bodyStatus: 201,
      },
      { name: 'create customer', send: () => t.http.post(withToken('customers')).send({ email: 'ct@example.com' }), status: 201 },
      { name: 'list customers', send: () => t.http.get(withToken('customers')), status: 200 },
      { name: 'read customer', send: () => t.http.get(withToken(`customers/${customerId}`)), status: 200 },
      {
        name: 'update customer',
        send: () => t.http.put(withToken(`customers/${customerId}`)).send({ company: 'C' }),
        status: 200,
        bodyStatus: 201,
      },
      {
        name: 'delete customer',
        send: async () => {
          const created = await t.http.post(withToken('customers')).send({ email: 'gone@example.com' }).expect(201);
          return t.http.delete(withToken(`customers/${created.body.data.Customer.id}`));
        },
        status: 200,
      },
      { name: 'validation failure', send: () => t.http.post(withToken('profiles')).send({ email: 'not-an-email' }), status: 400 },
      { name: 'malformed JSON', send: () => raw('post', withToken('profiles'), '{"name":', 'application/json'), status: 400 },
      { name: 'missing token', send: () => t.http.get('/v1/profiles'), status: 401 },
      { name: 'unknown record', send: () => t.http.get(withToken(`customers/${UNKNOWN_ID}`)), status: 404 },
      { name: 'unknown route', send: () => t.http.get('/nope'), status: 404 },
      { name: 'too large', send: () => t.http.post(withToken('profiles')).send({ name: 'x'.repeat(70 * KiB) }), status: 413 },
      { name: 'wrong media type', send: () => raw('post', withToken('profiles'), 'name=x', 'text/plain'), status: 415 },
    ];

    it.each(cases)('$name answers $status with Content-Type "application/json; charset=UTF-8"', async ({ send, status, bodyStatus }) => {
      const res = await send();
      expect(res.status).toBe(status);
      expect(res.headers['content-type']).toBe(JSON_CT);
      expect({ success: res.body.success, status: res.body.status }).toEqual({ success: status < 400, status: bodyStatus ?? status });
    });
  });

  describe('authentication', () => {
    // Express routes /V1/... and an absolute-form request line to the same handlers: the token is required there too.
    it.each([
      ['/V1/customers', 'the path in capitals'],
      ['http://localhost/v1/customers', 'an absolute-form request line'],
      ['/v1/customers/', 'a trailing slash'],
    ])('GET %s (%s) without a token is 401, and with one reaches the route', async (path) => {
      const refused = await rawRequest(t.baseUrl, { method: 'GET', path });
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.text).error.message).toBe('access_token is required');
      const answered = await rawRequest(t.baseUrl, { method: 'GET', path, headers: { authorization: `Bearer ${TOKENS.a}` } });
      expect(answered.status).toBe(200);
      expect(JSON.parse(answered.text).success).toBe(true);
    });

    it.each(OPERATIONS)('%s /v1/%s without a token is 401 "access_token is required"', async (method, path) => {
      const req = t.http[method](`/v1/${path}`);
      const res = await (hasBody(method) ? req.send({ name: 'x', email: 'x@example.com' }) : req);
      expectExactError(res, 401, 'UNAUTHORIZED', { details: false });
      expect(res.body.error.message).toBe('access_token is required');
    });

    it.each(OPERATIONS)('%s /v1/%s with an unknown token is 401 "access_token is invalid"', async (method, path) => {
      const req = t.http[method](withToken(path, UNKNOWN_TOKEN));
      const res = await (hasBody(method) ? req.send({ name: 'x', email: 'x@example.com' }) : req);
      expectExactError(res, 401, 'UNAUTHORIZED', { details: false });
      expect(res.body.error.message).toBe('access_token is invalid');
      expectNoToken(res, UNKNOWN_TOKEN);
    });

    it('accepts Authorization: Bearer <token> in place of the query parameter', async () => {
      const created = await t.http.post('/v1/profiles').set('Authorization', `Bearer ${TOKENS.a}`).send({ name: 'Bearer Co' });
      expect(created.status).toBe(201);
      const id = created.body.data.Profile.id;
      const read = await t.http.get(`/v1/profiles/${id}`).set('Authorization', `Bearer ${TOKENS.a}`);
      expect(read.status).toBe(200);
      expect(read.body.data[0].Profile).toMatchObject({ id, name: 'Bearer Co' });
      // The same record through the query parameter: the Bearer token spoke for the same account.
      await t.http.get(withToken(`profiles/${id}`)).expect(200);
    });

    it.each([
      ['the bare token', TOKENS.a],
      ['another scheme', `Basic ${TOKENS.a}`],
      ['"Bearer" alone', 'Bearer'],
    ])('answers 401 naming the form the Authorization header must have, to %s', async (_label, authorization) => {
      const res = await t.http.get('/v1/profiles').set('Authorization', authorization);
      expectExactError(res, 401, 'UNAUTHORIZED', { details: false });
      expect(res.body.error.message).toBe('the Authorization header must be "Bearer <access token>" (or send ?access_token=<access token>)');
      expectNoToken(res, TOKENS.a);
    });

    it('answers 401 "access_token is invalid" to an unknown Bearer token', async () => {
      const res = await t.http.get('/v1/profiles').set('Authorization', `Bearer ${UNKNOWN_TOKEN}`);
      expectExactError(res, 401, 'UNAUTHORIZED', { details: false });
      expect(res.body.error.message).toBe('access_token is invalid');
      expectNoToken(res, UNKNOWN_TOKEN);
    });
  });

  describe('request media type', () => {
    const refused: [string, string | undefined][] = [
      ['text/plain', 'text/plain'],
      ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
      ['no Content-Type', undefined],
    ];
    const writes: [Method, string, () => string][] = [
      ['post', 'profiles', () => withToken('profiles')],
      ['put', 'profiles/{id}', () => withToken(`profiles/${profileId}`)],
      ['post', 'customers', () => withToken('customers')],
      ['put', 'customers/{id}', () => withToken(`customers/${customerId}`)],
    ];
    const refusedCases = refused.flatMap(([label, ct]) => writes.map(([method, path, url]) => [label, method, path, url, ct] as const));

    it.each(refusedCases)('%s on %s /v1/%s is 415 UNSUPPORTED_MEDIA_TYPE', async (_label, method, _path, url, contentType) => {
      const res = await raw(method, url(), '{"name":"x","email":"x@example.com"}', contentType);
      expectExactError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', { details: false });
    });

    it.each(['application/json; charset=utf-8', 'application/JSON', 'application/json;charset=UTF-8'])(
      'accepts Content-Type %s on create and update',
      async (contentType) => {
        const created = await raw('post', withToken('profiles'), '{"name":"Typed"}', contentType);
        expect(created.status).toBe(201);
        const id = created.body.data.Profile.id;
        const updated = await raw('put', withToken(`profiles/${id}`), '{"name":"Typed again"}', contentType);
        expect(updated.status).toBe(200);
        expect(updated.body.data.Profile.name).toBe('Typed again');
      },
    );
  });

  describe('body size', () => {
    /** A valid JSON object padded with whitespace to exactly `bytes` bytes. */
    const paddedBody = (bytes: number, name: string) => {
      const core = JSON.stringify({ name });
      return core.slice(0, -1) + ' '.repeat(bytes - core.length) + '}';
    };

    it.each<[Method, () => string]>([
      ['post', () => withToken('profiles')],
      ['put', () => withToken(`profiles/${profileId}`)],
    ])('%s with a 70 KiB string field is 413 PAYLOAD_TOO_LARGE', async (method, url) => {
      const res = await t.http[method](url()).send({ name: 'x'.repeat(70 * KiB) });
      expectExactError(res, 413, 'PAYLOAD_TOO_LARGE', { details: false });
    });

    it('answers 413 to a body of 64 KiB + 1 byte', async () => {
      const body = paddedBody(64 * KiB + 1, 'One too many');
      expect(Buffer.byteLength(body)).toBe(64 * KiB + 1);
      expectExactError(await raw('post', withToken('profiles'), body, 'application/json'), 413, 'PAYLOAD_TOO_LARGE', { details: false });
    });

    it.each([60 * KiB, 64 * KiB])('accepts a valid body of %i bytes', async (bytes) => {
      const body = paddedBody(bytes, `Padded ${bytes}`);
      expect(Buffer.byteLength(body)).toBe(bytes);
      const res = await raw('post', withToken('profiles'), body, 'application/json');
      expect(res.status).toBe(201);
      expect(res.body.data.Profile.name).toBe(`Padded ${bytes}`);
    });

    it('answers a 60 KiB body with a too-long field with 400 naming the field, not 413', async () => {
      const res = await t.http.post(withToken('profiles')).send({ description: 'x'.repeat(60 * KiB) });
      expectExactError(res, 400, 'VALIDATION_FAILED', { details: true });
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['description']);
    });
  });

  describe('malformed bodies', () => {
    it.each([
      ['a truncated object', '{"name":'],
      ['an empty body', ''],
      ['whitespace only', '   \n'],
      ['single quotes', "{'name': 'x'}"],
      ['a trailing comma', '{"name": "x",}'],
      ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ])('%s is 400 MALFORMED_JSON', async (_label, body) => {
      const res = await raw('post', withToken('profiles'), body, 'application/json');
      expectExactError(res, 400, 'MALFORMED_JSON', { details: false });
    });

    it.each([
      ['an array', '[{"name":"x"}]'],
      ['an empty array', '[]'],
      ['a string', '"name"'],
      ['a number', '42'],
      ['null', 'null'],
      ['a boolean', 'true'],
    ])('a body that is %s is 400 VALIDATION_FAILED', async (_label, body) => {
      const [post, put] = await Promise.all([
        raw('post', withToken('customers'), body, 'application/json'),
        raw('put', withToken(`customers/${customerId}`), body, 'application/json'),
      ]);
      expectExactError(post, 400, 'VALIDATION_FAILED');
      expectExactError(put, 400, 'VALIDATION_FAILED');
    });

    const deepBodies: [string, string][] = [
      ['5000 levels of arrays in a field', `{"name":${nestedArrays(5000)}}`],
      ['30000 levels of arrays in a field', `{"name":${nestedArrays(30000)}}`],
      ['5000 levels of objects in a field', `{"email":${nestedObjects(5000)}}`],
      ['5000 levels of arrays in an unknown field', `{"nope":${nestedArrays(5000)}}`],
      ['30000 levels of arrays as the body', nestedArrays(30000)],
    ];
    const deepTargets: [Method, string, () => string][] = [
      ['post', 'profiles', () => withToken('profiles')],
      ['post', 'customers', () => withToken('customers')],
      ['put', 'profiles/{id}', () => withToken(`profiles/${profileId}`)],
      ['put', 'customers/{id}', () => withToken(`customers/${customerId}`)],
    ];
    const deepCases = deepBodies.flatMap(([label, body]) => deepTargets.map(([method, path, url]) => [label, method, path, url, body] as const));

    it.each(deepCases)('%s, %s /v1/%s: a 4xx in the error envelope, never a 5xx', async (_label, method, _path, url, body) => {
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(64 * KiB);
      const res = await raw(method, url(), body, 'application/json');
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectExactError(res, res.status, /^(VALIDATION_FAILED|MALFORMED_JSON)$/);
    });

    it('keeps answering after the deeply nested bodies', async () => {
      const [profile, customer] = await Promise.all([t.http.get(withToken(`profiles/${profileId}`)), t.http.get(withToken(`customers/${customerId}`))]);
      expect([profile.status, customer.status]).toEqual([200, 200]);
      expect(profile.body.data[0].Profile.id).toBe(profileId);
      await t.http.post(withToken('profiles')).send({ name: 'Still here' }).expect(201);
    });
  });

  describe('unknown routes', () => {
    it.each<[Method, string]>([
      ['get', withToken('nope')],
      ['get', '/nope'],
      ['get', '/'],
      ['post', withToken('profiles/x/y')],
      ['get', withToken(`customers/${UNKNOWN_ID}/nope`)],
    ])('%s %s is 404 NOT_FOUND in the error envelope', async (method, url) => {
      const req = t.http[method](url);
      const res = await (hasBody(method) ? req.send({ name: 'x' }) : req);
      expectExactError(res, 404, 'NOT_FOUND', { details: false });
      expect(res.text).not.toMatch(/<html|<!DOCTYPE/i);
      expectNoToken(res, TOKENS.a);
    });
  });

  describe('the token never leaks', () => {
    const cases: { name: string; send: () => Promise<Response>; status: number }[] = [
      { name: 'an unknown route with the token in the query', send: () => t.http.get(withToken('nope?x=1')), status: 404 },
      { name: 'a validation failure', send: () => t.http.post(withToken('profiles')).send({ email: 'bad', nope: 1 }), status: 400 },
      { name: 'a bad list query', send: () => t.http.get(withToken('customers?limit=1000&page=0')), status: 400 },
      { name: 'an unknown record', send: () => t.http.get(withToken(`profiles/${UNKNOWN_ID}`)), status: 404 },
      { name: 'a malformed id', send: () => t.http.delete(withToken('customers/not-an-id')), status: 404 },
      {
        name: 'malformed JSON',
        send: () => raw('put', withToken(`profiles/${profileId}`), '{"name":', 'application/json'),
        status: 400,
      },
      { name: 'a wrong media type', send: () => raw('post', withToken('customers'), 'x', 'text/plain'), status: 415 },
      { name: 'a body too large', send: () => t.http.post(withToken('customers')).send({ name: 'x'.repeat(70 * KiB) }), status: 413 },
    ];

    it.each(cases)('$name ($status): neither message nor headers contain the token', async ({ send, status }) => {
      const res = await send();
      expect(res.status).toBe(status);
      expect(res.body.success).toBe(false);
      expectNoToken(res, TOKENS.a);
    });

    it('nor does a response to a Bearer token', async () => {
      const res = await t.http.get('/v1/nope').set('Authorization', `Bearer ${TOKENS.a}`);
      expectExactError(res, 404, 'NOT_FOUND', { details: false });
      expectNoToken(res, TOKENS.a);
    });
  });

  describe('unknown and malformed record ids', () => {
    const ids: [string, string][] = [
      ['an unknown UUID', UNKNOWN_ID],
      ['a short id', 'abc'],
      ['36 characters not in UUID form', 'x'.repeat(36)],
      ['a UUID with a trailing character', `${UNKNOWN_ID}0`],
      ['broken percent-encoding', '%E0%A4%A'],
    ];
    const cases = ['profiles', 'customers'].flatMap((resource) =>
      (['get', 'put', 'delete'] as Method[]).flatMap((method) => ids.map(([label, id]) => [method, resource, label, id] as const)),
    );

    it.each(cases)('%s /v1/%s/{%s} is 404 NOT_FOUND', async (method, resource, _label, id) => {
      const req = t.http[method](withToken(`${resource}/${id}`));
      const res = await (method === 'put' ? req.send({ name: 'x' }) : req);
      expectExactError(res, 404, 'NOT_FOUND', { details: false });
    });
  });

  describe('X-Request-Id', () => {
    it.each<[string, () => Promise<Response>]>([
      ['a success', () => t.http.get(withToken('profiles'))],
      ['a 401', () => t.http.get('/v1/profiles')],
      ['a 404 route', () => t.http.get('/nope')],
      ['a 400', () => raw('post', withToken('profiles'), '{', 'application/json')],
    ])('%s carries a fresh X-Request-Id', async (_name, send) => {
      const [one, two] = [await send(), await send()];
      expect(one.headers['x-request-id']).toMatch(/\S/);
      expect(two.headers['x-request-id']).toMatch(/\S/);
      expect(one.headers['x-request-id']).not.toBe(two.headers['x-request-id']);
    });

    it.each([
      ['on a success', () => withToken('profiles')],
      ['on an error', () => withToken(`profiles/${UNKNOWN_ID}`)],
    ])('echoes a well-formed client X-Request-Id %s', async (_name, url) => {
      const id = 'client-req_42.abc:XYZ';
      const res = await t.http.get(url()).set('X-Request-Id', id);
      expect(res.headers['x-request-id']).toBe(id);
    });
  });
});
