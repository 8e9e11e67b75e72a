/**
 * /v1/customers end to end, over HTTP only: service-interface.md 4.2 and the rules of CONTRACT.md.
 * One app serves the file; the describe that counts records exactly starts its own.
 */
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

type Rec = Record<string, unknown>;
type Query = Record<string, string | number>;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** What list, read and update answer; create answers these and the four create-only fields. */
const SHORT_FIELDS = ['id', 'name', 'company', 'address', 'tel', 'email', 'mobile', 'created'];
const CREATE_ONLY = ['postal_code', 'fax', 'registration_number', 'economical_number'];
const DIGIT_FIELDS = ['tel', ...CREATE_ONLY];
const TEXT_LIMITS: [string, number][] = [
  ['name', 255],
  ['company', 255],
  ['address', 1000],
];

let seq = 0;
/** A value unique within this file's run; never a substring of another one. */
const uid = (prefix = 'u') => `${prefix}${++seq}x`;
const uniqueEmail = () => `${uid('mail')}@example.com`;
const uniqueMobile = () => `0912${String(++seq).padStart(7, '0')}`;
/** The least a customer needs: an e-mail address. */
const contact = () => ({ email: uniqueEmail() });

const shortOf = (customer: Rec): Rec => Object.fromEntries(SHORT_FIELDS.map((f) => [f, customer[f]]));
/** A test-title form of a value: long strings by their length. */
const show = (value: unknown) =>
  typeof value === 'string' && value.length > 30 ? `a ${value.length}-character string` : JSON.stringify(value);

/** A fresh app for the enclosing describe (the whole file at top level). */
function freshApp(): () => TestApp {
  let app: TestApp;
  beforeAll(async () => (app = await startTestApp()));
  afterAll(() => app.close());
  return () => app;
}

const withQuery = (path: string, query: Query) => {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return search ? `${path}?${search}` : path;
};

/** Fails with the response body in view when the status is not the one expected. */
async function expectStatus(req: PromiseLike<Response>, status: number): Promise<Response> {
  const res = await req;
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  return res;
}

function expectError(res: Response, status: number, code: string | RegExp, fields: string[] = []): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  expect(res.headers['content-type']).toBe(JSON_CT);
  const codeMatcher = typeof code === 'string' ? code : expect.stringMatching(code);
  expect(res.body).toEqual({ success: false, status, error: expect.objectContaining({ code: codeMatcher, message: expect.any(String) }) });
  const details: Rec[] = res.body.error.details ?? [];
  for (const detail of details) expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
  expect(details.map((d) => d.field)).toEqual(expect.arrayContaining(fields));
}

function expectCreatedNow(created: unknown): void {
  expect(Number.isInteger(created)).toBe(true);
  expect(Math.abs((created as number) - Date.now() / 1000)).toBeLessThan(10);
}

const idsOf = (res: Response): string[] => res.body.data.map((w: { Customer: Rec }) => w.Customer.id);
const totalOf = (res: Response) => Number(res.headers['x-total-count']);

/** The customer operations as one token sees them. */
function client(app: () => TestApp, token: string = TOKENS.a) {
  const http = () => app().http;
  const item = (id: string, slash: boolean) => withToken(`customers/${id}${slash ? '/' : ''}`, token);
  const post = (body: unknown, path = 'customers') => http().post(withToken(path, token)).send(body as object);
  const list = (query: Query = {}, path = 'customers') => http().get(withToken(withQuery(path, query), token));
  const get = (id: string, slash = false) => http().get(item(id, slash));
  const put = (id: string, body: unknown, slash = false) => http().put(item(id, slash)).send(body as object);
  const del = (id: string, slash = false) => http().delete(item(id, slash));
  const create = async (body: Rec): Promise<Rec> => (await expectStatus(post(body), 201)).body.data.Customer;
  const read = async (id: string): Promise<Rec> => (await expectStatus(get(id), 200)).body.data[0].Customer;
  return { post, list, get, put, del, create, read };
}

const app = freshApp();
const A = client(app);
const A2 = client(app, TOKENS.a2);
const B = client(app, TOKENS.b);

describe('POST /v1/customers (create)', () => {
  it('answers 201 with all twelve fields; integer digit fields come back as digit strings', async () => {
    const body = {
      name: 'Jane Buyer',
      email: 'Jane@Buyer.example',
      mobile: '09121234567',
      address: '2 Market Road',
      postal_code: 1234567890,
      company: 'Buyer Ltd',
      tel: 2122334455,
      fax: 2122334466,
      registration_number: 10101,
      economical_number: 411122233344,
    };
    const res = await expectStatus(A.post(body), 201);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({
      data: {
        Customer: {
          ...body,
          postal_code: '1234567890',
          tel: '2122334455',
          fax: '2122334466',
          registration_number: '10101',
          economical_number: '411122233344',
          id: expect.stringMatching(UUID_V4),
          created: expect.any(Number),
        },
      },
      success: true,
      status: 201,
    });
    expectCreatedNow(res.body.data.Customer.created);
  });

  it.each(DIGIT_FIELDS)('keeps the leading zeros of %s sent as a string', async (field) => {
    const customer = await A.create({ ...contact(), [field]: '000120' });
    expect(customer[field]).toBe('000120');
  });

  it.each([
    ['only an e-mail address', () => ({ email: uniqueEmail() })],
    ['only a mobile number', () => ({ mobile: uniqueMobile() })],
  ])('takes %s and answers "" for every field not sent', async (_label, bodyOf) => {
    const body = bodyOf();
    const customer = await A.create(body);
    const empty = ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'];
    expect(customer).toEqual({
      ...Object.fromEntries(empty.map((f) => [f, ''])),
      ...body,
      id: expect.stringMatching(UUID_V4),
      created: expect.any(Number),
    });
  });

  it('takes mobile as an 11-digit integer and answers it as a string', async () => {
    const customer = await A.create({ mobile: 91212345678 });
    expect(customer.mobile).toBe('91212345678');
    expect((await A.read(customer.id as string)).mobile).toBe('91212345678');
  });

  it('stores strings exactly as sent', async () => {
    const name = '  Zoë Ünïcode — 株式会社  ';
    expect((await A.create({ ...contact(), name })).name).toBe(name);
  });

  it.each<[string, Rec]>([
    ['no field at all', {}],
    ['only other fields', { name: 'Nobody', company: 'Nowhere' }],
    ['both as ""', { name: 'Nobody', email: '', mobile: '' }],
    ['both as null', { name: 'Nobody', email: null, mobile: null }],
  ])('refuses %s without email or mobile: 400 naming both', async (_label, body) => {
    expectError(await A.post(body), 400, 'VALIDATION_FAILED', ['email', 'mobile']);
  });

  it.each(['customers', 'customers/'])('works on the collection path %s', async (path) => {
    const res = await expectStatus(A.post({ ...contact(), name: 'Path' }, path), 201);
    expect((await A.read(res.body.data.Customer.id)).name).toBe('Path');
  });

  it('shows each new customer in the very next list (read-your-writes, 20 times)', async () => {
    const email = uniqueEmail();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const { id } = await A.create({ email, name: `ryw ${i}` });
      ids.unshift(id as string);
      const res = await expectStatus(A.list({ email, limit: 100 }), 200);
      expect(idsOf(res)).toEqual(ids);
      expect(totalOf(res)).toBe(i + 1);
    }
    expect(new Set(ids).size).toBe(20);
  });
});

describe('GET /v1/customers (list)', () => {
  describe('order, paging, shape and X-Total-Count', () => {
    const own = freshApp();
    const mine = client(own);
    let newestFirst: Rec[];
    let newestIds: string[];
    beforeAll(async () => {
      const made = [];
      for (let i = 0; i < 25; i++) {
        // Every other one has only a mobile and no optional field: its blanks show as "".
        made.push(await mine.create(i % 2 ? { mobile: uniqueMobile() } : { name: `c${i}`, email: uniqueEmail(), postal_code: 12345 }));
      }
      newestFirst = made.reverse();
      newestIds = newestFirst.map((c) => c.id as string);
    });

    it('answers 200 with the short records, the 10 newest first by default, "" for no value', async () => {
      const res = await expectStatus(mine.list(), 200);
      expect(res.headers['content-type']).toBe(JSON_CT);
      expect(res.body).toEqual({
        data: newestFirst.slice(0, 10).map((c) => ({ Customer: shortOf(c) })),
        success: true,
        status: 200,
      });
      expect(totalOf(res)).toBe(25);
      const blank = res.body.data.find((w: { Customer: Rec }) => w.Customer.email === '').Customer;
      expect(blank).toMatchObject({ name: '', company: '', address: '', tel: '', email: '' });
    });

    it.each<[Query, number, number]>([
      [{ limit: 100 }, 0, 25],
      [{ limit: 1 }, 0, 1],
      [{ limit: 3, offset: 4 }, 4, 7],
      [{ offset: 20 }, 20, 25],
      [{ offset: 25 }, 25, 25],
      [{ page: 1 }, 0, 10],
      [{ page: 2 }, 10, 20],
      [{ page: 2, limit: 7 }, 7, 14],
      [{ page: 3, limit: 10 }, 20, 25],
      [{ page: 9 }, 80, 80],
    ])('with %j answers records %i to %i of the newest-first order', async (query, from, to) => {
      const res = await expectStatus(mine.list(query), 200);
      expect(idsOf(res)).toEqual(newestIds.slice(from, to));
      expect(totalOf(res)).toBe(25);
    });

    it('keeps the order stable across pages: every record exactly once', async () => {
      const seen: string[] = [];
      for (let page = 1; page <= 7; page++) seen.push(...idsOf(await expectStatus(mine.list({ page, limit: 4 }), 200)));
      expect(seen).toEqual(newestIds);
    });

    it.each<[string, string | number]>([
      ['limit', 0],
      ['limit', 101],
      ['limit', 'abc'],
      ['limit', -1],
      ['limit', 1.5],
      ['offset', -1],
      ['offset', 'abc'],
      ['page', 0],
      ['page', -1],
      ['page', 'abc'],
    ])('refuses %s=%s with 400 naming the parameter', async (param, value) => {
      expectError(await mine.list({ [param]: value }), 400, 'VALIDATION_FAILED', [param]);
    });

    it('refuses offset and page together with 400 naming the parameter', async () => {
      const res = await mine.list({ offset: 10, page: 2 });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: Rec) => d.field)).toEqual(expect.arrayContaining([expect.stringMatching(/^(offset|page)$/)]));
    });

    it('ignores unknown query parameters', async () => {
      const res = await expectStatus(mine.list({ limit: 5, colour: 'blue', sort: 'name' }), 200);
      expect(idsOf(res)).toEqual(newestIds.slice(0, 5));
    });

    it('answers the same on /v1/customers without and with a trailing slash', async () => {
      for (const path of ['customers', 'customers/']) {
        expect(idsOf(await expectStatus(mine.list({ limit: 100 }, path), 200))).toEqual(newestIds);
      }
    });

    it("shows an account's customers to its every token and to no other account", async () => {
      const sameAccount = await expectStatus(client(own, TOKENS.a2).list({ limit: 100 }), 200);
      expect(idsOf(sameAccount)).toEqual(newestIds);
      const other = await expectStatus(client(own, TOKENS.b).list(), 200);
      expect(other.body.data).toEqual([]);
      expect(totalOf(other)).toBe(0);
    });
  });

  describe('filters', () => {
    /** Lists with the query and expects exactly these customers, newest first. */
    const expectListed = async (query: Query, expected: Rec[], who = A) => {
      const res = await expectStatus(who.list({ ...query, limit: 100 }), 200);
      expect(idsOf(res)).toEqual(expected.map((c) => c.id));
      expect(totalOf(res)).toBe(expected.length);
    };

    it('matches email exactly, ignoring case', async () => {
      const tag = uid('buyer');
      const hit = await A.create({ email: `Buyer.${tag}@Example.com` });
      await A.create({ email: `buyer.${tag}@example.com.au` });
      await A.create({ email: `x.buyer.${tag}@example.com` });
      await expectListed({ email: `BUYER.${tag}@EXAMPLE.COM` }, [hit]);
      await expectListed({ email: `buyer.${tag}@example` }, []);
    });

    it('matches mobile exactly', async () => {
      const mobile = uniqueMobile();
      const hit = await A.create({ mobile });
      await A.create({ mobile: `0913${mobile.slice(4)}` });
      await expectListed({ mobile }, [hit]);
      await expectListed({ mobile: mobile.slice(0, 10) }, []);
    });

    it('matches company as a substring, ignoring case', async () => {
      const tag = uid('co');
      const trading = await A.create({ ...contact(), company: `Acme ${tag} Trading` });
      const holding = await A.create({ ...contact(), company: `${tag.toUpperCase()} Holding` });
      await A.create({ ...contact(), company: 'Unrelated Inc' });
      await expectListed({ company: `${tag.toUpperCase()} trading` }, [trading]);
      await expectListed({ company: tag }, [holding, trading]);
    });

    it('combines filters with AND', async () => {
      const email = uniqueEmail();
      const mobile = uniqueMobile();
      const tag = uid('and');
      const first = await A.create({ email, mobile });
      await A.create({ email, company: tag });
      const third = await A.create({ email, mobile, company: `${tag} Ltd` });
      await A.create({ email: uniqueEmail(), mobile, company: tag });
      await expectListed({ email, mobile }, [third, first]);
      await expectListed({ email, mobile, company: tag }, [third]);
    });

    it('counts every match in X-Total-Count while paging', async () => {
      const email = uniqueEmail();
      const made = [];
      for (let i = 0; i < 3; i++) made.unshift(await A.create({ email }));
      const firstPage = await expectStatus(A.list({ email, limit: 1 }), 200);
      expect(idsOf(firstPage)).toEqual([made[0].id]);
      expect(totalOf(firstPage)).toBe(3);
      const secondPage = await expectStatus(A.list({ email, limit: 1, page: 2 }), 200);
      expect(idsOf(secondPage)).toEqual([made[1].id]);
      expect(totalOf(secondPage)).toBe(3);
    });

    it("never shows another account's customers", async () => {
      const email = uniqueEmail();
      const ours = await A.create({ email });
      await B.create({ email });
      await expectListed({ email }, [ours]);
      await expectListed({ email }, [ours], A2);
    });
  });
});

describe('GET /v1/customers/{id} (read one)', () => {
  it('answers 200 with an array holding the one short record', async () => {
    const created = await A.create({ ...contact(), name: 'Read', mobile: uniqueMobile(), company: 'Co', tel: '021', postal_code: 99, fax: 98 });
    const res = await expectStatus(A.get(created.id as string), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({ data: [{ Customer: shortOf(created) }], success: true, status: 200 });
  });

  it('works with a trailing slash and for every token of the account', async () => {
    const created = await A.create({ ...contact(), name: 'slash' });
    expect((await expectStatus(A.get(created.id as string, true), 200)).body.data).toEqual([{ Customer: shortOf(created) }]);
    expect((await expectStatus(A2.get(created.id as string), 200)).body.data).toEqual([{ Customer: shortOf(created) }]);
  });
});

describe('unknown, malformed and foreign ids', () => {
  const badIds: [string, () => Promise<string>][] = [
    ['an unknown UUID v4', async () => randomUUID()],
    ['"abc"', async () => 'abc'],
    ['36 characters of garbage', async () => 'z'.repeat(36)],
    ['a UUID shape with non-hex characters', async () => 'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz'],
    ['a UUID with one character too many', async () => `${randomUUID()}a`],
    ["another account's customer", async () => (await B.create(contact())).id as string],
  ];
  const operations: [string, (id: string) => PromiseLike<Response>][] = [
    ['GET', (id) => A.get(id)],
    ['PUT', (id) => A.put(id, { name: 'x' })],
    ['DELETE', (id) => A.del(id)],
  ];
  const cases = operations.flatMap(([method, call]) => badIds.map(([label, id]) => [method, label, call, id] as const));

  it.each(cases)('%s of %s answers 404 NOT_FOUND', async (_method, _label, call, makeId) => {
    expectError(await call(await makeId()), 404, 'NOT_FOUND');
  });

  it("leaves another account's customer untouched after their attempts", async () => {
    const theirs = await B.create({ ...contact(), name: 'theirs' });
    expectError(await A.put(theirs.id as string, { name: 'mine now' }), 404, 'NOT_FOUND');
    expectError(await A.del(theirs.id as string), 404, 'NOT_FOUND');
    expect(await B.read(theirs.id as string)).toEqual(shortOf(theirs));
  });
});

describe('PUT /v1/customers/{id} (update)', () => {
  /** A customer with every field filled in. */
  const createFull = () =>
    A.create({
      name: 'Full',
      email: uniqueEmail(),
      mobile: uniqueMobile(),
      address: 'Full Street 1',
      postal_code: '0123',
      company: 'Full Co',
      tel: '0215551234',
      fax: 5,
      registration_number: 6,
      economical_number: 7,
    });

  it('changes the fields sent, keeps the others, and answers the short record with HTTP 200 and body status 201', async () => {
    const before = await createFull();
    const res = await expectStatus(A.put(before.id as string, { name: 'Renamed', tel: 9876 }), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    const after = { ...shortOf(before), name: 'Renamed', tel: '9876' };
    expect(res.body).toEqual({ data: { Customer: after }, success: true, status: 201 });
    expect(await A.read(before.id as string)).toEqual(after);
  });

  it.each([
    ['""', ''],
    ['null', null],
  ])('clears fields sent as %s', async (_label, empty) => {
    const before = await createFull();
    const res = await expectStatus(A.put(before.id as string, { name: empty, address: empty, company: empty, tel: empty }), 200);
    const after = { ...shortOf(before), name: '', address: '', company: '', tel: '' };
    expect(res.body.data.Customer).toEqual(after);
    expect(await A.read(before.id as string)).toEqual(after);
  });

  it('keeps leading zeros of a tel string and takes mobile as an integer', async () => {
    const { id } = await A.create(contact());
    const res = await expectStatus(A.put(id as string, { tel: '000123', mobile: 91200000001 }), 200);
    expect(res.body.data.Customer).toMatchObject({ tel: '000123', mobile: '91200000001' });
    expect(await A.read(id as string)).toMatchObject({ tel: '000123', mobile: '91200000001' });
  });

  it.each([
    ['the same values', (c: Rec) => ({ name: c.name, email: c.email, mobile: Number(c.mobile), tel: c.tel })],
    ['an empty body', () => ({})],
  ])('answers the record unchanged when sent %s', async (_label, bodyOf) => {
    const before = await A.create({ name: 'Same', email: uniqueEmail(), mobile: '91200000002', tel: '0217' });
    const res = await expectStatus(A.put(before.id as string, bodyOf(before)), 200);
    expect(res.body).toEqual({ data: { Customer: shortOf(before) }, success: true, status: 201 });
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it.each<[string, () => Rec, Rec]>([
    ['clearing the only email with ""', () => ({ email: uniqueEmail() }), { email: '' }],
    ['clearing the only email with null', () => ({ email: uniqueEmail() }), { email: null }],
    ['clearing the only mobile', () => ({ mobile: uniqueMobile() }), { mobile: '' }],
    ['clearing both', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), { email: null, mobile: '' }],
  ])('refuses %s: 400 naming email and mobile, changing nothing', async (_label, initial, update) => {
    const before = await A.create({ ...initial(), name: 'Reachable' });
    expectError(await A.put(before.id as string, { ...update, name: 'changed' }), 400, 'VALIDATION_FAILED', ['email', 'mobile']);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it.each<[string, () => Rec, () => Rec]>([
    ['clearing the email while the mobile stays', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), () => ({ email: '' })],
    ['clearing the mobile while the email stays', () => ({ email: uniqueEmail(), mobile: uniqueMobile() }), () => ({ mobile: null })],
    ['swapping the email for a mobile in one request', () => ({ email: uniqueEmail() }), () => ({ email: '', mobile: uniqueMobile() })],
  ])('allows %s', async (_label, initial, updateOf) => {
    const before = await A.create(initial());
    const update = updateOf();
    const res = await expectStatus(A.put(before.id as string, update), 200);
    const expected = { ...shortOf(before), ...Object.fromEntries(Object.entries(update).map(([f, v]) => [f, v ?? ''])) };
    expect(res.body.data.Customer).toEqual(expected);
    expect(await A.read(before.id as string)).toEqual(expected);
  });

  it.each(CREATE_ONLY)('refuses the create-only field %s with 400 naming it, changing nothing', async (field) => {
    const before = await createFull();
    expectError(await A.put(before.id as string, { name: 'changed', [field]: '42' }), 400, 'VALIDATION_FAILED', [field]);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it('works with a trailing slash and from another token of the account', async () => {
    const { id } = await A.create({ ...contact(), name: 'old' });
    expect((await expectStatus(A.put(id as string, { name: 'slash' }, true), 200)).body.data.Customer.name).toBe('slash');
    expect((await expectStatus(A2.put(id as string, { address: 'second token' }), 200)).body.data.Customer).toMatchObject({
      name: 'slash',
      address: 'second token',
    });
  });

  it('loses no update when 10 PUTs setting different fields race', async () => {
    const { id } = await A.create({ ...contact(), name: 'race' });
    const valueOf: Record<string, (i: number) => string> = {
      name: (i) => `Raced Name ${i}`,
      address: (i) => `Raced Street ${i}`,
      company: (i) => `Raced Co ${i}`,
      tel: (i) => `55501${i}`,
      email: (i) => `raced${i}@example.com`,
      mobile: (i) => `0912555000${i}`,
    };
    const fields = Object.keys(valueOf);
    const changes = Array.from({ length: 10 }, (_, i) => ({ field: fields[i % fields.length], value: valueOf[fields[i % fields.length]](i) }));
    const responses = await Promise.all(changes.map(({ field, value }) => A.put(id as string, { [field]: value })));
    expect(responses.map((r) => [r.status, r.body.status])).toEqual(responses.map(() => [200, 201]));
    const final = await A.read(id as string);
    for (const field of fields) {
      // A field sent twice ends with one of the two values; a lost update would leave the old one.
      expect(changes.filter((c) => c.field === field).map((c) => c.value)).toContain(final[field]);
    }
  });
});

describe('DELETE /v1/customers/{id} (delete)', () => {
  it('answers 200 with the id and the message, then the customer is gone', async () => {
    const email = uniqueEmail();
    const { id } = await A.create({ email });
    const res = await expectStatus(A.del(id as string), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({ data: { Customer: { id } }, success: true, status: 200, message: 'Customer deleted successfully.' });
    expectError(await A.get(id as string), 404, 'NOT_FOUND');
    expectError(await A.put(id as string, { name: 'ghost' }), 404, 'NOT_FOUND');
    expectError(await A.del(id as string), 404, 'NOT_FOUND');
    const listed = await expectStatus(A.list({ email }), 200);
    expect(listed.body.data).toEqual([]);
    expect(totalOf(listed)).toBe(0);
  });

  it('works with a trailing slash', async () => {
    const { id } = await A.create(contact());
    expect((await expectStatus(A.del(id as string, true), 200)).body.data).toEqual({ Customer: { id } });
    expectError(await A.get(id as string), 404, 'NOT_FOUND');
  });
});

describe('field validation', () => {
  const badDigits: unknown[] = [-1, 1.5, '12a', '-1', ' 123', '+98212', '1'.repeat(21), true, { n: 1 }];
  const invalid: [string, unknown][] = [
    ...DIGIT_FIELDS.flatMap((field) => badDigits.map((value): [string, unknown] => [field, value])),
    ['mobile', '0912123456'],
    ['mobile', '091212345678'],
    ['mobile', '0912-123-456'],
    ['mobile', ' 09121234567'],
    ['mobile', '۰۹۱۲۱۲۳۴۵۶۷'],
    ['mobile', 9121234567],
    ['mobile', 912123456789],
    ['mobile', -9121234567],
    ['mobile', 91212345.67],
    ['mobile', true],
    ['email', 'not-an-email'],
    ['email', 'missing-domain@'],
    ['email', '@example.com'],
    ['email', 'two words@example.com'],
    ['email', `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.com`],
    ['email', 42],
    ['name', 42],
    ['company', ['list']],
    ['address', { street: 'x' }],
  ];
  const invalidCases = invalid.map(([field, value]) => ({ field, value, shown: show(value) }));
  /** Valid contact fields, so that only the field under test is at fault. */
  const base = { email: 'valid@example.com', mobile: '09120000000' };

  it.each(invalidCases)('refuses $field = $shown on create with 400 naming the field', async ({ field, value }) => {
    expectError(await A.post({ ...base, [field]: value }), 400, 'VALIDATION_FAILED', [field]);
  });

  it.each(invalidCases.filter(({ field }) => !CREATE_ONLY.includes(field)))(
    'refuses $field = $shown on update with 400 naming the field, changing nothing',
    async ({ field, value }) => {
      const before = await A.create({ ...base, name: 'valid' });
      expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      expect(await A.read(before.id as string)).toEqual(shortOf(before));
    },
  );

  it.each(TEXT_LIMITS)('takes %s of %i characters and refuses one more', async (field, max) => {
    const atMax = await A.create({ ...contact(), [field]: 'x'.repeat(max) });
    expect(atMax[field]).toBe('x'.repeat(max));
    expectError(await A.post({ ...contact(), [field]: 'x'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
    expectError(await A.put(atMax.id as string, { [field]: 'y'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
  });

  it('takes the extreme valid values of digit fields, mobile and email', async () => {
    const body = {
      ...Object.fromEntries(DIGIT_FIELDS.map((f) => [f, '9'.repeat(20)])),
      email: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
      mobile: '00000000000',
    };
    expect(body.email).toHaveLength(254);
    expect(await A.create(body)).toMatchObject(body);
    expect((await A.create({ mobile: 10000000000, tel: 0 })).mobile).toBe('10000000000');
  });

  it.each(['id', 'created', 'logo', 'default', 'colour', 'Email'])(
    'refuses the field %s on create and on update with 400 naming it',
    async (field) => {
      const value = field === 'default' || field === 'created' ? 1 : 'x';
      expectError(await A.post({ ...contact(), [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      const before = await A.create({ ...contact(), name: 'valid' });
      expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      expect(await A.read(before.id as string)).toEqual(shortOf(before));
    },
  );

  it('reports every fault of one request, and stores nothing', async () => {
    const email = uniqueEmail();
    const body = { email, mobile: '123', tel: 'x', postal_code: -1, company: 'c'.repeat(256), id: randomUUID(), colour: 'blue' };
    const res = await A.post(body);
    expectError(res, 400, 'VALIDATION_FAILED', ['mobile', 'tel', 'postal_code', 'company', 'id', 'colour']);
    expect(res.body.error.details.map((d: Rec) => d.field)).not.toContain('email');
    expect(totalOf(await expectStatus(A.list({ email }), 200))).toBe(0);
  });

  it('reports every fault of one update', async () => {
    const before = await A.create(contact());
    const res = await A.put(before.id as string, { email: 'bad', tel: 'x', fax: 1, created: 1 });
    expectError(res, 400, 'VALIDATION_FAILED', ['email', 'tel', 'fax', 'created']);
    expect(await A.read(before.id as string)).toEqual(shortOf(before));
  });

  it('refuses a body that is not a JSON object', async () => {
    expectError(await A.post([contact()]), 400, /^(VALIDATION_FAILED|MALFORMED_JSON)$/);
  });
});
