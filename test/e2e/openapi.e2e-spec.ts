import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Response } from 'supertest';
import { expectError } from '../support/http-assertions';
import { rawRequest } from '../support/raw-http';
import { TEST_WORKERS } from '../support/stores';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

type Method = 'get' | 'post' | 'put' | 'delete';
interface MediaObject {
  schema: object;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        tags?: string[];
        summary?: string;
        description?: string;
        security?: Record<string, string[]>[];
        parameters?: { name: string; description?: string }[];
        requestBody?: { content: Record<string, MediaObject> };
        responses: Record<string, DocumentedResponse>;
      }
    >
  >;
  components: { securitySchemes: Record<string, object> };
  tags: { name: string }[];
  servers?: { url: string }[];
}
interface DocumentedResponse {
  headers?: Record<string, { required?: boolean }>;
  content: Record<string, MediaObject>;
}

const OPERATIONS: [Method, string][] = [
  ['post', '/v1/profiles'],
  ['get', '/v1/profiles'],
  ['get', '/v1/profiles/{id}'],
  ['put', '/v1/profiles/{id}'],
  ['delete', '/v1/profiles/{id}'],
  ['get', '/v1/profiles/{id}/history'],
  ['post', '/v1/customers'],
  ['get', '/v1/customers'],
  ['get', '/v1/customers/{id}'],
  ['put', '/v1/customers/{id}'],
  ['delete', '/v1/customers/{id}'],
  ['get', '/v1/customers/{id}/history'],
  ['get', '/v1/events'],
];

describe('the OpenAPI document', () => {
  let app: TestApp;
  let doc: OpenApi;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const compiled = new Map<object, ValidateFunction>();
  /** The schema, with the document's components beside it so its $refs resolve. */
  const validator = (schema: object) => {
    if (!compiled.has(schema)) compiled.set(schema, ajv.compile({ ...schema, components: doc.components }));
    return compiled.get(schema)!;
  };
  /**
   * The schema as a linter that reads every object schema without `additionalProperties` as closed
   * (Redocly's example check) reads it: an example it refuses is flagged by that linter.
   */
  const closed = (schema: unknown): unknown => {
    if (Array.isArray(schema)) return schema.map(closed);
    if (typeof schema !== 'object' || schema === null) return schema;
    const copy = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, key === 'example' ? value : closed(value)]));
    return 'properties' in copy && !('additionalProperties' in copy) ? { ...copy, additionalProperties: false } : copy;
  };
  /** Which documented answers the real service has given, as `method path status`. */
  const seen = new Set<string>();

  /** The real answer is one the document lists for the operation, and matches its schema and headers. */
  function conforms(res: Response, method: Method, path: string): void {
    const documented = doc.paths[path]?.[method]?.responses[String(res.status)];
    expect({ operation: `${method} ${path}`, status: res.status, documented: documented !== undefined }).toEqual({
      operation: `${method} ${path}`,
      status: res.status,
      documented: true,
    });
    // JSON, the one media type of every answer but the feed's 200, which may also be a stream (checked on its own below).
    expect(Object.keys(documented.content)[0]).toBe(JSON_CT);
    expect(res.headers['content-type']).toBe(JSON_CT);
    const validate = validator(documented.content[JSON_CT].schema);
    expect({ body: res.body, errors: validate(res.body) ? null : validate.errors }).toEqual({ body: res.body, errors: null });
    // Every header the document gives, but those it says may be absent (X-Next-Cursor after a short page).
    for (const [header, { required }] of Object.entries(documented.headers ?? {})) {
      if (required !== false) expect(res.headers[header.toLowerCase()]).toBeDefined();
    }
    seen.add(`${method} ${path} ${res.status}`);
  }

  /** The documented request body accepts (or refuses) `body` as the service does. */
  function requestConforms(method: Method, path: string, body: object, valid: boolean): void {
    const validate = validator(doc.paths[path][method].requestBody!.content['application/json'].schema);
    expect({ body, valid: validate(body) }).toEqual({ body, valid });
  }

  beforeAll(async () => {
    app = await startTestApp();
    const res = await app.http.get('/docs-json').expect(200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    doc = res.body;
  });
  afterAll(() => app.close());

  it('lists every operation of /v1', () => {
    for (const [method, path] of OPERATIONS) expect(doc.paths[path]?.[method]).toBeDefined();
  });

  it('describes the real answers of every profile operation, errors included', async () => {
    const { http } = app;
    const body = { name: 'Shop', slug: 'docshop', tel: 2071234567, email: 'shop@example.com' };
    requestConforms('post', '/v1/profiles', body, true);
    const created = await http.post(withToken('profiles')).send(body);
    conforms(created, 'post', '/v1/profiles');
    const id: string = created.body.data.Profile.id;
    conforms(await http.post(withToken('profiles')).send({ slug: 'DOCSHOP' }), 'post', '/v1/profiles'); // 409
    conforms(await http.post(withToken('profiles')).send({ tel: -1, logo: 'x' }), 'post', '/v1/profiles'); // 400
    conforms(await http.post(withToken('profiles')).set('Content-Type', 'text/plain').send('x'), 'post', '/v1/profiles'); // 415
    conforms(await http.post(withToken('profiles')).send({ description: 'x'.repeat(70_000) }), 'post', '/v1/profiles'); // 413
    conforms(await http.get(withToken('profiles?name=shop')), 'get', '/v1/profiles');
    conforms(await http.get(withToken('profiles?limit=0')), 'get', '/v1/profiles'); // 400
    conforms(await http.get('/v1/profiles'), 'get', '/v1/profiles'); // 401
    conforms(await http.get(withToken(`profiles/${id}`)), 'get', '/v1/profiles/{id}');
    conforms(await http.get(withToken(`profiles/${id}`, TOKENS.b)), 'get', '/v1/profiles/{id}'); // 404
    conforms(await http.get(withToken(`profiles/${id}?as_of=${Math.floor(Date.now() / 1000) + 60}`)), 'get', '/v1/profiles/{id}');
    conforms(await http.get(withToken(`profiles/${id}?as_of=yesterday`)), 'get', '/v1/profiles/{id}'); // 400
    requestConforms('put', '/v1/profiles/{id}', { tel: '0123', site: null }, true);
    const updated = await http.put(withToken(`profiles/${id}`)).send({ tel: '0123', site: null });
    conforms(updated, 'put', '/v1/profiles/{id}');
    expect(updated.status).toBe(200);
    conforms(await http.put(withToken(`profiles/${id}`)).send({ slug: 'not a slug' }), 'put', '/v1/profiles/{id}'); // 400
    conforms(
      await http
        .put(withToken(`profiles/${id}`))
        .set('If-Match', '"0"')
        .send({ name: 'Late' }),
      'put',
      '/v1/profiles/{id}',
    ); // 412
    conforms(await http.delete(withToken(`profiles/${id}`)).set('If-Match', 'nonsense'), 'delete', '/v1/profiles/{id}'); // 400
    conforms(await http.delete(withToken(`profiles/${id}`)).set('If-Match', '"0"'), 'delete', '/v1/profiles/{id}'); // 412
    conforms(await http.delete(withToken(`profiles/${id}`)), 'delete', '/v1/profiles/{id}');
    conforms(await http.delete(withToken(`profiles/${id}`)), 'delete', '/v1/profiles/{id}'); // 404
    conforms(await http.get(withToken(`profiles/${id}/history`)), 'get', '/v1/profiles/{id}/history');
    conforms(await http.get(withToken(`profiles/${id}/history?limit=101`)), 'get', '/v1/profiles/{id}/history'); // 400
    conforms(await http.get(withToken(`profiles/${id}/history`, TOKENS.b)), 'get', '/v1/profiles/{id}/history'); // 404
  });

  it('describes the real answers of every customer operation, errors included', async () => {
    const { http } = app;
    const body = { name: 'Ada', email: 'ada@example.com', postal_code: '01234', fax: 2071234567, mobile: 19123456789 };
    requestConforms('post', '/v1/customers', body, true);
    const created = await http.post(withToken('customers')).set('Idempotency-Key', 'doc-key-1').send(body);
    conforms(created, 'post', '/v1/customers');
    const id: string = created.body.data.Customer.id;
    conforms(await http.post(withToken('customers')).set('Idempotency-Key', 'doc-key-1').send({ email: 'other@example.com' }), 'post', '/v1/customers'); // 409
    conforms(await http.post(withToken('customers')).send({ name: 'No contact' }), 'post', '/v1/customers'); // 400
    conforms(await http.post(withToken('customers', 'bad-token')).send(body), 'post', '/v1/customers'); // 401
    conforms(await http.get(withToken('customers?company=&page=1')), 'get', '/v1/customers');
    conforms(await http.get(withToken('customers?page=1&offset=0')), 'get', '/v1/customers'); // 400
    conforms(await http.get(withToken(`customers/${id}`)), 'get', '/v1/customers/{id}');
    conforms(await http.get(withToken('customers/not-a-uuid')), 'get', '/v1/customers/{id}'); // 404
    requestConforms('put', '/v1/customers/{id}', { company: 'Engines', tel: 42 }, true);
    conforms(await http.put(withToken(`customers/${id}`)).send({ company: 'Engines', tel: 42 }), 'put', '/v1/customers/{id}');
    conforms(await http.put(withToken(`customers/${id}`)).send({ fax: '1' }), 'put', '/v1/customers/{id}'); // 400
    conforms(await http.delete(withToken(`customers/${id}`)), 'delete', '/v1/customers/{id}');
    conforms(await http.get(withToken(`customers/${id}/history?page=1`)), 'get', '/v1/customers/{id}/history');
    conforms(await http.put(withToken(`customers/${id}`)).send({ name: 'Gone' }), 'put', '/v1/customers/{id}'); // 404
  });

  it('describes the real answers of the change feed, its entries and its errors', async () => {
    const { http } = app;
    const id = (await http.post(withToken('customers')).send({ name: 'Feed', email: 'feed@example.com' }).expect(201)).body.data.Customer.id;
    await http
      .put(withToken(`customers/${id}`))
      .send({ name: 'Feed Two' })
      .expect(200);
    await http.post(withToken(`customers/${id}/erase`)).expect(200);
    const page = await http.get(withToken('events?limit=1000'));
    conforms(page, 'get', '/v1/events');
    const told = (page.body.data as { subject: string; type: string }[]).filter((e) => e.subject === id).map((e) => e.type);
    expect(told).toEqual(['customer.created', 'customer.updated', 'customer.erased']);
    const cursor = page.headers['x-next-cursor'];
    conforms(await http.get(withToken(`events?after=${cursor}&wait=0`)), 'get', '/v1/events'); // an empty page
    conforms(await http.get(withToken(`events?after=${cursor}`, TOKENS.b)), 'get', '/v1/events'); // 400: another account's cursor
    conforms(await http.get(withToken('events?limit=1001&wait=31')), 'get', '/v1/events'); // 400
    conforms(await http.get('/v1/events'), 'get', '/v1/events'); // 401

    // The stream: the documented second media type of the 200, with the documented headers and parameters.
    const operation = doc.paths['/v1/events'].get;
    expect(Object.keys(operation.responses['200'].content)).toEqual([JSON_CT, 'text/event-stream']);
    expect(operation.parameters!.map((p) => p.name)).toEqual(['after', 'limit', 'wait', 'Last-Event-ID']);
    const abort = new AbortController();
    const stream = await fetch(`${app.baseUrl}/v1/events`, {
      headers: { Authorization: `Bearer ${TOKENS.a}`, Accept: 'text/event-stream', 'Last-Event-ID': page.body.data[0].id },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes(`event: customer.erased`)) text += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    const events = text.split('\n\n').filter((block) => block.startsWith('id: '));
    const validate = validator({ $ref: '#/components/schemas/FeedEntry' });
    for (const block of events) {
      const [idLine, eventLine, dataLine] = block.split('\n');
      const entry = JSON.parse(dataLine.slice('data: '.length));
      expect({ entry, errors: validate(entry) ? null : validate.errors }).toEqual({ entry, errors: null });
      expect([idLine, eventLine]).toEqual([`id: ${entry.id}`, `event: ${entry.type}`]);
    }
    expect(events.length).toBe(page.body.data.length - 1);
  });

  it('refuses in the request schemas what the service refuses', async () => {
    const refused: [Method, string, string, object][] = [
      ['post', '/v1/customers', 'customers', { email: 'a@example.com', tel: -1 }],
      ['post', '/v1/customers', 'customers', { email: 'a@example.com', tel: '12a' }],
      ['post', '/v1/customers', 'customers', { email: 'not-an-email' }],
      ['post', '/v1/customers', 'customers', { email: 'a@example.com', mobile: '123' }],
      ['post', '/v1/customers', 'customers', { email: 'a@example.com', id: 'x' }],
      ['post', '/v1/profiles', 'profiles', { slug: 'has space' }],
      ['post', '/v1/profiles', 'profiles', { name: 'x'.repeat(256) }],
      ['post', '/v1/profiles', 'profiles', { default: 1 }],
    ];
    for (const [method, path, collection, body] of refused) {
      requestConforms(method, path, body, false);
      expectError(await app.http.post(withToken(collection)).send(body), 400, 'VALIDATION_FAILED');
    }
  });

  it('describes the 429 answer', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_REQUESTS: '1' } });
    try {
      // One request each: the second is refused (with TEST_WORKERS, each worker allows its own one).
      const answers = [];
      for (let n = 0; n <= (TEST_WORKERS || 1); n++) answers.push(await limited.http.get(withToken('customers')));
      for (const res of answers) conforms(res, 'get', '/v1/customers');
      expect(seen.has('get /v1/customers 429')).toBe(true);
    } finally {
      await limited.close();
    }
  });

  it('has had every operation answer with its documented success', () => {
    const successes = OPERATIONS.flatMap(([method, path]) =>
      Object.keys(doc.paths[path][method].responses)
        .filter((status) => status.startsWith('2'))
        .map((status) => `${method} ${path} ${status}`),
    );
    expect(successes.filter((s) => !seen.has(s))).toEqual([]);
  });

  it('gives every request body and every answer of /v1 and /health an example its own schema accepts', () => {
    const checked: string[] = [];
    const closedCompiled = new Map<string, ValidateFunction>();
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const media = [
          ...Object.values(operation.requestBody?.content ?? {}).map((m) => ['request', m] as const),
          ...Object.entries(operation.responses).flatMap(([status, r]) => Object.values(r.content ?? {}).map((m) => [status, m] as const)),
        ];
        for (const [what, { schema, example, examples }] of media as [string, MediaObject][]) {
          if (path === '/metrics') continue; // Prometheus text
          const values = example !== undefined ? [example] : Object.values(examples ?? {}).map((e) => e.value);
          expect({ operation: `${method} ${path} ${what}`, examples: values.length }).toEqual({ operation: `${method} ${path} ${what}`, examples: 1 });
          // And as read closed, with the components it refers to: each error answer's, say.
          const key = JSON.stringify(schema);
          if (!closedCompiled.has(key)) closedCompiled.set(key, ajv.compile({ ...(closed(schema) as object), components: closed(doc.components) }));
          const closedValidate = closedCompiled.get(key)!;
          for (const validate of [validator(schema), closedValidate])
            expect({ operation: `${method} ${path} ${what}`, errors: validate(values[0]) ? null : validate.errors }).toEqual({
              operation: `${method} ${path} ${what}`,
              errors: null,
            });
          checked.push(`${method} ${path} ${what}`);
        }
      }
    }
    expect(checked).toEqual(
      expect.arrayContaining(['post /v1/customers request', 'put /v1/profiles/{id} request', 'get /health/ready 503', 'delete /v1/customers/{id} 412']),
    );
  });

  it("gives what spec linters ask for (Spectral's spectral:oas, Redocly's recommended): servers, each operation's security, description and 4xx answers", async () => {
    // Relative: wherever the service runs, the address the document came from.
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.length).toBeGreaterThan(OPERATIONS.length);
    for (const { path, method, operation } of operations) {
      const { summary, description, security, responses } = operation;
      expect({ path, method, summary: !!summary, description: !!description }).toEqual({ path, method, summary: true, description: true });
      expect({ path, method, security }).toEqual({ path, method, security: path.startsWith('/v1/') ? [{ bearer: [] }, { access_token: [] }] : [] });
      expect({ path, method, has4xx: Object.keys(responses).some((status) => status.startsWith('4')) }).toEqual({ path, method, has4xx: true });
    }
    // The 4xx of health and metrics are real: the checks made before routing answer them too.
    for (const path of ['/health/live', '/metrics']) {
      // Raw: supertest cannot send an Expect header.
      const { status, headers, text } = await rawRequest(app.baseUrl, { method: 'GET', path, headers: { expect: 'something' } });
      conforms({ status, headers, body: JSON.parse(text) } as Response, 'get', path);
    }
  });

  it('says how each list filter matches', () => {
    const filters = (path: string) =>
      Object.fromEntries(
        (doc.paths[path].get.parameters ?? []).filter((p) => !['limit', 'offset', 'page', 'after'].includes(p.name)).map((p) => [p.name, p.description]),
      );
    expect(filters('/v1/customers')).toEqual({
      email: expect.stringMatching(/^filter: matches the whole value, ignoring case;/),
      mobile: expect.stringMatching(/^filter: matches the whole value exactly; digits may be typed in ASCII, Persian or Arabic-Indic;/),
      company: expect.stringMatching(/^filter: matches any record whose value contains it, ignoring case;/),
    });
    expect(Object.keys(filters('/v1/profiles'))).toEqual(['email', 'tel', 'site', 'slug']);
  });

  it('describes the token as an opaque bearer token, and tags every operation with a declared lower-case tag', () => {
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer', description: expect.any(String) });
    const declared = doc.tags.map((t) => t.name);
    expect(declared).toEqual(['profiles', 'customers', 'events', 'operations']);
    const used = new Set(Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((o) => o.tags ?? [])));
    expect([...used].sort()).toEqual([...declared].sort());
  });

  it("documents both answers of /health/ready, 200 and 503 (beside the before-routing checks' 413 and 417), and the real 200 conforms", async () => {
    expect(Object.keys(doc.paths['/health/ready'].get.responses).sort()).toEqual(['200', '413', '417', '503']);
    const ready = await app.http.get('/health/ready');
    expect(ready.status).toBe(200);
    const schema = doc.paths['/health/ready'].get.responses['200'].content[JSON_CT].schema;
    expect(validator(schema)(ready.body)).toBe(true);
  });

  it('is browsable at /docs without a token', async () => {
    const page = await app.http.get('/docs').expect(200);
    // upgrade-insecure-requests would send the page's scripts to https on a plain http port (test/e2e/browser.e2e-spec.ts).
    expect(page.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const scripts = [...page.text.matchAll(/src="\.\/docs\/([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toContain('swagger-ui-init.js');
    for (const script of scripts) await app.http.get(`/docs/${script}`).expect(200);
  });
});
