/**
 * Property-based hostile input: thousands of random requests to every operation, with random JSON in
 * every field, wrong types, huge and deeply nested bodies, unicode edge cases, random query strings,
 * ids and headers. Every answer is a 2xx or a 4xx in the envelope, as JSON with the exact content type;
 * the service stays up; and afterwards every read model equals a fresh rebuild from the events.
 */
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { startChildService } from '../support/child-service';
import { jsonRequest, RawRequest, RawResponse, rawRequest } from '../support/raw-http';
import { JSON_CT, makeDataDir, TOKENS } from '../support/test-app';
import { describeOnSqlite } from '../support/stores';
import { expectReadModelsEqualARebuild } from '../support/rebuild-check';

/** 500 runs of 20 concurrent requests; FUZZ_RUNS sets another number of runs, for a quick look or a long soak. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
/** About a minute on 2 idle cores; the bound is for a machine shared with other work. */
const TIMEOUT_MS = 300_000;
const PER_RUN = 20;
const RESOURCES = ['customers', 'profiles'] as const;
const FIELDS = {
  customers: ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'],
  profiles: ['name', 'description', 'tel', 'email', 'address', 'site', 'slug', 'messenger', 'network_a', 'network_b', 'network_c'],
};
const QUERY_KEYS = ['limit', 'offset', 'page', 'email', 'mobile', 'company', 'tel', 'site', 'slug', 'access_token', 'name', 'as_of'];

// ---------------------------------------------------------------- arbitraries

/** Strings that break naive code: lone surrogates, NUL, RTL override, BOM, combining marks, emoji, astral. */
const EDGE = [
  '\ud800',
  '\udfff',
  '\udbff\udc00',
  '\u0000',
  '\u202e',
  '\u200f',
  '\ufeff',
  'e\u0301',
  '👩‍👩‍👧',
  '𝕏',
  '%00',
  '../',
  "'; DROP TABLE events; --",
  '\\',
  '"',
  '\n',
];
const nasty = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.array(fc.oneof(fc.constantFrom(...EDGE), fc.string({ maxLength: 5 })), { maxLength: 8 }).map((parts) => parts.join('')),
);
/** Values a field may plausibly take, so that some writes succeed and the read models fill up. */
const plausible = fc.oneof(
  fc.emailAddress(),
  fc.constantFrom('a@example.com', 'B@Example.com', '09121234567', '021-1234', 'https://example.com', 'my-slug', 'Acme'),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/),
  fc.integer({ min: 0, max: 99_999_999 }),
  fc.stringMatching(/^0912\d{7}$/),
);
const fieldValue = fc.oneof({ weight: 3, arbitrary: plausible }, nasty, fc.jsonValue({ maxDepth: 3 }), fc.constant(null), fc.constant(''));
const deepNesting = fc.integer({ min: 1, max: 30_000 }).map((depth) => `{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`);

/** A body that passes validation, with any text in its name: the writes that reach the event store. */
const validBody = fc
  .record({ name: fc.oneof(nasty, fc.string({ maxLength: 255 })), email: fc.constantFrom('a@example.com', 'B@Example.com', 'x.y@example.org') })
  .map((o) => JSON.stringify(o));

const bodyOf = (resource: keyof typeof FIELDS) =>
  fc.oneof(
    { weight: 4, arbitrary: validBody },
    {
      weight: 6,
      arbitrary: fc
        .dictionary(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...FIELDS[resource]) }, nasty), fieldValue, { maxKeys: 6 })
        .map((o) => JSON.stringify(o)),
    },
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    nasty, // not JSON, or JSON by accident
    fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)), // often not UTF-8
    fc.constantFrom(Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('{"name":"\ud800"}'), '{"name":"\\ud800"}', '', ' ', 'null', '{}', '[]', '{"name":"a"}{'),
    deepNesting,
    fc.integer({ min: 60_000, max: 70_000 }).map((size) => JSON.stringify({ name: 'x'.repeat(size) })), // around the 64 KiB limit
    fc.constant(undefined),
  );

/** Any id: a real one (of either account, by index into those made so far), a UUID, or any text. */
const idArb = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((i) => ({ known: i })) },
  fc.uuid().map((s) => ({ raw: s })),
  nasty.map((s) => ({ raw: s })),
);
const headerSafe = fc.string({ maxLength: 40 }).filter((s) => /^[\t\x20-\x7e]*$/.test(s));
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  fc.constantFrom(
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'application/json; charset=latin1',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonx',
    '',
  ),
  headerSafe,
  fc.constant(undefined),
);
const credentials = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(TOKENS.a, TOKENS.a2, TOKENS.b).map((t) => ({ bearer: t })) },
  fc.constantFrom(TOKENS.a, TOKENS.b).map((t) => ({ query: t })),
  nasty.map((t) => ({ query: t })),
  headerSafe.map((t) => ({ header: t })),
  fc.constant({}),
);
const extraHeaders = fc.dictionary(
  fc.constantFrom(
    'x-request-id',
    'content-encoding',
    'accept',
    'accept-charset',
    'if-match',
    'idempotency-key',
    'if-none-match',
    'x-forwarded-for',
    'cookie',
    'x-http-method-override',
    'x-custom',
  ),
  fc.oneof(fc.constantFrom('gzip', 'deflate', 'br', 'identity', '*', 'application/xml', '"0"', '"1", "2"', 'W/"0"', 'key-1'), headerSafe),
  { maxKeys: 3 },
);
const queryArb = fc.array(fc.tuple(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...QUERY_KEYS) }, nasty), fc.oneof(plausible.map(String), nasty)), {
  maxLength: 5,
});

const requestArb = fc.constantFrom(...RESOURCES).chain((resource) =>
  fc.record({
    resource: fc.constant(resource),
    op: fc.constantFrom('create', 'list', 'read', 'history', 'update', 'delete', 'other'),
    method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
    id: idArb,
    onItem: fc.boolean(),
    trailingSlash: fc.boolean(),
    query: queryArb,
    credentials,
    contentType,
    headers: extraHeaders,
    body: bodyOf(resource),
  }),
);
type Spec = typeof requestArb extends fc.Arbitrary<infer T> ? T : never;

// ---------------------------------------------------------------- requests and answers

/** Percent-encodes any string, lone surrogates included (as their raw, invalid UTF-8 bytes). */
const encode = (s: string) =>
  [...s]
    .map((ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return '%ED%A0%80'; // a lone surrogate: bytes that are not UTF-8
      }
    })
    .join('');

function toRequest(spec: Spec, ids: string[]): RawRequest {
  const id = 'known' in spec.id ? (ids.length ? ids[spec.id.known % ids.length] : 'none') : spec.id.raw;
  const collection = `/v1/${spec.resource}`;
  const [method, path] = {
    create: ['POST', collection],
    list: ['GET', collection],
    read: ['GET', `${collection}/${encode(id)}`],
    history: ['GET', `${collection}/${encode(id)}/history`],
    update: ['PUT', `${collection}/${encode(id)}`],
    delete: ['DELETE', `${collection}/${encode(id)}`],
    other: [spec.method, spec.onItem ? `${collection}/${encode(id)}` : collection],
  }[spec.op];
  const query = [...spec.query];
  if ('query' in spec.credentials) query.push(['access_token', spec.credentials.query]);
  const search = query.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&');
  const headers: Record<string, string> = { ...spec.headers };
  if ('bearer' in spec.credentials) headers.authorization = `Bearer ${spec.credentials.bearer}`;
  if ('header' in spec.credentials) headers.authorization = spec.credentials.header;
  if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
  const withBody = method !== 'GET' && method !== 'HEAD' && spec.body !== undefined;
  return { method, path: `${path}${spec.trailingSlash ? '/' : ''}${search ? `?${search}` : ''}`, headers, body: withBody ? spec.body : undefined };
}

/** What is wrong with an answer, or undefined when it keeps the contract. */
function faultOf(req: RawRequest, res: RawResponse): string | undefined {
  const ok = res.status >= 200 && res.status < 300;
  if (!ok && !(res.status >= 400 && res.status < 500)) return `status ${res.status}`;
  if (res.headers['content-type'] !== JSON_CT) return `content type ${String(res.headers['content-type'])}`;
  if (req.method === 'HEAD') return undefined; // the headers of a GET, no body
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.text);
  } catch {
    return 'a body that is not JSON';
  }
  if (ok) return body.success === true && body.status !== undefined && 'data' in body ? undefined : 'a 2xx outside the envelope';
  const { success, status, error, ...rest } = body as { success: unknown; status: unknown; error?: Record<string, unknown> };
  if (success !== false || status !== res.status || Object.keys(rest).length) return 'a 4xx outside the error envelope';
  const { code, message, details, ...more } = error ?? {};
  if (typeof code !== 'string' || typeof message !== 'string' || !message || Object.keys(more).length) return 'an error without code and message';
  const faults = details as { field?: unknown; message?: unknown }[] | undefined;
  if (faults !== undefined && !(Array.isArray(faults) && faults.length && faults.every((f) => typeof f.field === 'string' && typeof f.message === 'string'))) {
    return 'details that are not field faults';
  }
  return undefined;
}

const describeRequest = (req: RawRequest) =>
  `${req.method} ${req.path.slice(0, 200)} ${JSON.stringify(req.headers)} body: ${String(req.body ?? '').slice(0, 200)}`;

// ---------------------------------------------------------------- the run

describeOnSqlite('hostile input', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it(
    `answers ${RUNS * PER_RUN} random requests within the contract, stays up, and keeps its read models true to the events`,
    async () => {
      // A slow machine must not turn a write into a 503: this test is about input, not speed. Its
      // random wrong tokens would soon have its address refused: that bound is tested in hostile-edge.
      const service = await startChildService(dataDir, { READ_YOUR_WRITES_TIMEOUT_MS: '300000', RATE_LIMIT_AUTH_FAILURES: '0' });
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      const ids: string[] = [];
      const statuses = new Map<number, number>();
      try {
        await fc.assert(
          fc.asyncProperty(fc.array(requestArb, { minLength: PER_RUN, maxLength: PER_RUN }), async (specs) => {
            await Promise.all(
              specs.map(async (spec) => {
                const req = toRequest(spec, ids);
                const res = await rawRequest(service.url, req, agent);
                statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
                const fault = faultOf(req, res);
                if (fault) throw new Error(`${fault} for ${describeRequest(req)}: ${res.status} ${res.text.slice(0, 500)}`);
                if (req.method === 'POST' && res.status === 201) ids.push((Object.values(JSON.parse(res.text).data)[0] as { id: string }).id);
              }),
            );
          }),
          { numRuns: RUNS },
        );
        const answered = [...statuses.values()].reduce((a, b) => a + b, 0);
        expect(answered).toBeGreaterThanOrEqual(RUNS * PER_RUN);
        // The run reached the write side, not only the validation in front of it.
        expect(ids.length).toBeGreaterThan(RUNS / 5);
        expect(service.process.exitCode).toBeNull();
        // Still serving; and this write waits until every read model has folded all that came before.
        const last = await rawRequest(service.url, jsonRequest('POST', '/v1/customers', TOKENS.a, { email: 'last@example.com' }));
        expect(last.status).toBe(201);
        // No token ever reached the output.
        for (const token of Object.values(TOKENS)) expect(service.output()).not.toContain(token);
      } finally {
        agent.destroy();
        service.process.kill('SIGTERM');
        await service.exited;
      }
      await expectReadModelsEqualARebuild(join(dataDir, 'service.sqlite'));
    },
    TIMEOUT_MS,
  );
});
