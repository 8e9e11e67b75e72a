/**
 * /v1/profiles end to end, over HTTP only: service-interface.md 4.1 and the rules of CONTRACT.md.
 * One app serves the file; the describes that count records exactly start their own.
 */
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { JSON_CT, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

type Rec = Record<string, unknown>;
type Query = Record<string, string | number>;

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Every request field except slug (uniqueness rules of its own) with a sample value. */
const SAMPLE: Rec = {
  name: 'Acme Tools',
  description: 'Hand tools and hardware',
  tel: '02188776655',
  email: 'Sales@Acme.example',
  address: '1 Main Street, Springfield',
  site: 'https://acme.example',
  messenger: 'https://chat.example/acme',
  network_a: 'https://network-a.example/acme',
  network_b: 'https://network-b.example/acme',
  network_c: 'https://network-c.example/acme',
};
const TEXT_LIMITS: [string, number][] = [
  ['name', 255],
  ['description', 2000],
  ['address', 1000],
  ['site', 2048],
  ['messenger', 2048],
  ['network_a', 2048],
  ['network_b', 2048],
  ['network_c', 2048],
];

let seq = 0;
/** A value unique within this file's run, letters and digits only (so also a valid slug). */
const uid = (prefix = 'u') => `${prefix}${++seq}x`;
const uniqueEmail = () => `${uid('mail')}@example.com`;
const uniqueTel = () => String(7_000_000 + ++seq);

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

/** A test-title form of a value: long strings by their length. */
const show = (value: unknown) =>
  typeof value === 'string' && value.length > 30 ? `a ${value.length}-character string` : JSON.stringify(value);

const idsOf = (res: Response): string[] => res.body.data.map((w: { Profile: Rec }) => w.Profile.id);
const totalOf = (res: Response) => Number(res.headers['x-total-count']);

/** The profile operations as one token sees them. */
function client(app: () => TestApp, token: string = TOKENS.a) {
  const http = () => app().http;
  const item = (id: string, slash: boolean) => withToken(`profiles/${id}${slash ? '/' : ''}`, token);
  const post = (body: unknown, path = 'profiles') => http().post(withToken(path, token)).send(body as object);
  const list = (query: Query = {}, path = 'profiles') => http().get(withToken(withQuery(path, query), token));
  const get = (id: string, slash = false) => http().get(item(id, slash));
  const put = (id: string, body: unknown, slash = false) => http().put(item(id, slash)).send(body as object);
  const del = (id: string, slash = false) => http().delete(item(id, slash));
  const create = async (body: Rec = {}): Promise<Rec> => (await expectStatus(post(body), 201)).body.data.Profile;
  const read = async (id: string): Promise<Rec> => (await expectStatus(get(id), 200)).body.data[0].Profile;
  return { post, list, get, put, del, create, read };
}

const app = freshApp();
const A = client(app);
const A2 = client(app, TOKENS.a2);
const B = client(app, TOKENS.b);

describe('POST /v1/profiles (create)', () => {
  it('answers 201 with the full record; integer digit fields come back as digit strings', async () => {
    const body = { ...SAMPLE, tel: 2188776655, slug: uid('acme') };
    const res = await expectStatus(A.post(body), 201);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({
      data: {
        Profile: {
          ...body,
          tel: '2188776655',
          id: expect.stringMatching(UUID_V4),
          logo: '',
          signature: '',
          default: expect.any(Number),
          created: expect.any(Number),
        },
      },
      success: true,
      status: 201,
    });
    expect([0, 1]).toContain(res.body.data.Profile.default);
    expectCreatedNow(res.body.data.Profile.created);
  });

  it('answers "" for every field not sent', async () => {
    const profile = await A.create({});
    expect(profile).toEqual({
      id: expect.stringMatching(UUID_V4),
      ...Object.fromEntries([...Object.keys(SAMPLE), 'slug', 'logo', 'signature'].map((f) => [f, ''])),
      default: expect.any(Number),
      created: expect.any(Number),
    });
  });

  it.each([
    ['an integer', 42, '42'],
    ['zero', 0, '0'],
    ['a string with leading zeros', '0098218877', '0098218877'],
    ['a 20-digit string', '00000000000000000001', '00000000000000000001'],
  ])('takes tel as %s and answers a digit string', async (_label, tel, expected) => {
    const profile = await A.create({ tel });
    expect(profile.tel).toBe(expected);
    expect((await A.read(profile.id as string)).tel).toBe(expected);
  });

  it('stores strings exactly as sent', async () => {
    const name = '  Café Ünïcode — 株式会社  ';
    const profile = await A.create({ name });
    expect(profile.name).toBe(name);
    expect((await A.read(profile.id as string)).name).toBe(name);
  });

  it.each(['profiles', 'profiles/'])('works on the collection path %s', async (path) => {
    const res = await expectStatus(A.post({ name: 'Path' }, path), 201);
    expect((await A.read(res.body.data.Profile.id)).name).toBe('Path');
  });

  it('shows each new profile in the very next list (read-your-writes, 20 times)', async () => {
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

describe('the default flag', () => {
  let own: TestApp;
  beforeEach(async () => (own = await startTestApp()));
  afterEach(() => own.close());
  const mine = client(() => own);
  const theirs = client(() => own, TOKENS.b);
  const defaults = async (ids: string[]) => Promise.all(ids.map(async (id) => (await mine.read(id)).default));

  it("is 1 for an account's first live profile and 0 for the others, per account", async () => {
    const first = await mine.create({ name: 'first' });
    const second = await mine.create({ name: 'second' });
    const third = await mine.create({ name: 'third' });
    expect([first.default, second.default, third.default]).toEqual([1, 0, 0]);
    expect(await defaults([first, second, third].map((p) => p.id as string))).toEqual([1, 0, 0]);
    expect((await theirs.create({ name: 'their first' })).default).toBe(1);
  });

  it('passes to the oldest remaining profile when the default one is deleted', async () => {
    const ids = [];
    for (const name of ['first', 'second', 'third']) ids.push((await mine.create({ name })).id as string);
    await expectStatus(mine.del(ids[0]), 200);
    expect(await defaults(ids.slice(1))).toEqual([1, 0]);
    const listed = await expectStatus(mine.list(), 200);
    expect(listed.body.data.map((w: { Profile: Rec }) => [w.Profile.id, w.Profile.default])).toEqual([
      [ids[2], 0],
      [ids[1], 1],
    ]);
  });

  it('stays put when another profile is deleted, and goes to the next profile created after all are gone', async () => {
    const first = (await mine.create({ name: 'first' })).id as string;
    const second = (await mine.create({ name: 'second' })).id as string;
    await expectStatus(mine.del(second), 200);
    expect((await mine.read(first)).default).toBe(1);
    await expectStatus(mine.del(first), 200);
    expect((await mine.create({ name: 'after all gone' })).default).toBe(1);
  });
});

describe('GET /v1/profiles (list)', () => {
  describe('order, paging and X-Total-Count', () => {
    const own = freshApp();
    const mine = client(own);
    let newestFirst: string[];
    beforeAll(async () => {
      const ids = [];
      for (let i = 0; i < 25; i++) ids.push((await mine.create({ name: `p${i}` })).id as string);
      newestFirst = ids.reverse();
    });

    it('answers 200 with full-record wrappers, the 10 newest first by default', async () => {
      const res = await expectStatus(mine.list(), 200);
      expect(res.headers['content-type']).toBe(JSON_CT);
      expect(res.body).toEqual({ data: expect.any(Array), success: true, status: 200 });
      expect(idsOf(res)).toEqual(newestFirst.slice(0, 10));
      expect(totalOf(res)).toBe(25);
      const [newest] = res.body.data;
      expect(newest).toEqual({ Profile: await mine.read(newestFirst[0]) });
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
      expect(idsOf(res)).toEqual(newestFirst.slice(from, to));
      expect(totalOf(res)).toBe(25);
    });

    it('keeps the order stable across pages: every record exactly once', async () => {
      const seen: string[] = [];
      for (let page = 1; page <= 7; page++) seen.push(...idsOf(await expectStatus(mine.list({ page, limit: 4 }), 200)));
      expect(seen).toEqual(newestFirst);
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
      expect(idsOf(res)).toEqual(newestFirst.slice(0, 5));
    });

    it('answers the same on /v1/profiles/', async () => {
      expect(idsOf(await expectStatus(mine.list({ limit: 100 }, 'profiles/'), 200))).toEqual(newestFirst);
    });

    it("shows an account's profiles to its every token and to no other account", async () => {
      const sameAccount = await expectStatus(client(own, TOKENS.a2).list({ limit: 100 }), 200);
      expect(idsOf(sameAccount)).toEqual(newestFirst);
      const other = await expectStatus(client(own, TOKENS.b).list(), 200);
      expect(other.body.data).toEqual([]);
      expect(totalOf(other)).toBe(0);
    });
  });

  describe('filters', () => {
    /** Lists with the query and expects exactly these profiles, newest first. */
    const expectListed = async (query: Query, expected: Rec[], who = A) => {
      const res = await expectStatus(who.list({ ...query, limit: 100 }), 200);
      expect(idsOf(res)).toEqual(expected.map((p) => p.id));
      expect(totalOf(res)).toBe(expected.length);
    };

    it('matches email exactly, ignoring case', async () => {
      const tag = uid('shop');
      const hit = await A.create({ email: `Shop.${tag}@Example.com` });
      await A.create({ email: `shop.${tag}@example.com.au` });
      await A.create({ email: `x.shop.${tag}@example.com` });
      await expectListed({ email: `SHOP.${tag}@EXAMPLE.COM` }, [hit]);
      await expectListed({ email: `shop.${tag}@example` }, []);
    });

    it('matches tel exactly', async () => {
      const tel = uniqueTel();
      const zero = await A.create({ tel: `0${tel}` });
      const plain = await A.create({ tel: Number(tel) });
      await A.create({ tel: `${tel}1` });
      await expectListed({ tel }, [plain]);
      await expectListed({ tel: `0${tel}` }, [zero]);
    });

    it('matches site as a substring, ignoring case', async () => {
      const tag = uid('site');
      const shop = await A.create({ site: `https://www.${tag}.Example/shop` });
      const blog = await A.create({ site: `https://blog.example/${tag}` });
      await A.create({ site: 'https://unrelated.example' });
      await expectListed({ site: `${tag.toUpperCase()}.example` }, [shop]);
      await expectListed({ site: tag }, [blog, shop]);
    });

    it('matches slug exactly, ignoring case', async () => {
      const slug = uid('Store');
      const hit = await A.create({ slug });
      await A.create({ slug: `${slug}2` });
      await expectListed({ slug: slug.toUpperCase() }, [hit]);
      await expectListed({ slug: slug.slice(0, -1) }, []);
    });

    it('combines filters with AND', async () => {
      const email = uniqueEmail();
      const [tel1, tel2] = [uniqueTel(), uniqueTel()];
      const tag = uid('and');
      const first = await A.create({ email, tel: tel1 });
      await A.create({ email, tel: tel2, site: `https://${tag}.example` });
      const third = await A.create({ email, tel: tel1, site: `https://${tag}.example` });
      await A.create({ email: uniqueEmail(), tel: tel1, site: `https://${tag}.example` });
      await expectListed({ email, tel: tel1 }, [third, first]);
      await expectListed({ email, tel: tel1, site: tag }, [third]);
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

    it("never shows another account's profiles", async () => {
      const email = uniqueEmail();
      const ours = await A.create({ email });
      await B.create({ email });
      await expectListed({ email }, [ours]);
      await expectListed({ email }, [ours], A2);
    });
  });
});

describe('GET /v1/profiles/{id} (read one)', () => {
  it('answers 200 with an array holding the one full record', async () => {
    const created = await A.create({ ...SAMPLE, slug: uid('read') });
    const res = await expectStatus(A.get(created.id as string), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({ data: [{ Profile: created }], success: true, status: 200 });
  });

  it('works with a trailing slash and for every token of the account', async () => {
    const created = await A.create({ name: 'slash' });
    expect((await expectStatus(A.get(created.id as string, true), 200)).body.data).toEqual([{ Profile: created }]);
    expect((await expectStatus(A2.get(created.id as string), 200)).body.data).toEqual([{ Profile: created }]);
  });
});

describe('unknown, malformed and foreign ids', () => {
  const badIds: [string, () => Promise<string>][] = [
    ['an unknown UUID v4', async () => randomUUID()],
    ['"abc"', async () => 'abc'],
    ['36 characters of garbage', async () => 'z'.repeat(36)],
    ['a UUID shape with non-hex characters', async () => 'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz'],
    ['a UUID with one character too many', async () => `${randomUUID()}a`],
    ["another account's profile", async () => (await B.create({ name: 'theirs' })).id as string],
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

  it("leaves another account's profile untouched after their attempts", async () => {
    const theirs = await B.create({ name: 'theirs' });
    expectError(await A.put(theirs.id as string, { name: 'mine now' }), 404, 'NOT_FOUND');
    expectError(await A.del(theirs.id as string), 404, 'NOT_FOUND');
    expect(await B.read(theirs.id as string)).toEqual(theirs);
  });
});

describe('PUT /v1/profiles/{id} (update)', () => {
  it('changes the fields sent, keeps the others, and answers HTTP 200 with body status 201', async () => {
    const before = await A.create({ ...SAMPLE, slug: uid('upd') });
    const res = await expectStatus(A.put(before.id as string, { name: 'Renamed', tel: 9876 }), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    const after = { ...before, name: 'Renamed', tel: '9876' };
    expect(res.body).toEqual({ data: { Profile: after }, success: true, status: 201 });
    expect(await A.read(before.id as string)).toEqual(after);
  });

  it.each([
    ['""', ''],
    ['null', null],
  ])('clears fields sent as %s', async (_label, empty) => {
    const before = await A.create({ ...SAMPLE, slug: uid('clr') });
    const cleared = { description: empty, tel: empty, email: empty, site: empty, slug: empty };
    const res = await expectStatus(A.put(before.id as string, cleared), 200);
    const after = { ...before, description: '', tel: '', email: '', site: '', slug: '' };
    expect(res.body.data.Profile).toEqual(after);
    expect(await A.read(before.id as string)).toEqual(after);
  });

  it('keeps leading zeros of a tel string', async () => {
    const { id } = await A.create({ tel: 123 });
    expect((await expectStatus(A.put(id as string, { tel: '000123' }), 200)).body.data.Profile.tel).toBe('000123');
    expect((await A.read(id as string)).tel).toBe('000123');
  });

  it.each([
    ['the same values', (p: Rec) => ({ name: p.name, tel: Number(p.tel), slug: p.slug })],
    ['an empty body', () => ({})],
  ])('answers the record unchanged when sent %s', async (_label, bodyOf) => {
    const before = await A.create({ ...SAMPLE, tel: '12345', slug: uid('same') });
    const res = await expectStatus(A.put(before.id as string, bodyOf(before)), 200);
    expect(res.body).toEqual({ data: { Profile: before }, success: true, status: 201 });
    expect(await A.read(before.id as string)).toEqual(before);
  });

  it('works with a trailing slash and from another token of the account', async () => {
    const { id } = await A.create({ name: 'old' });
    expect((await expectStatus(A.put(id as string, { name: 'slash' }, true), 200)).body.data.Profile.name).toBe('slash');
    expect((await expectStatus(A2.put(id as string, { address: 'second token' }), 200)).body.data.Profile).toMatchObject({
      name: 'slash',
      address: 'second token',
    });
  });

  it('loses no update when 10 PUTs setting different fields race', async () => {
    const { id } = await A.create({ name: 'race' });
    const changes: Rec = {
      name: 'Raced Name',
      description: 'raced description',
      tel: '5550100',
      email: 'raced@example.com',
      address: 'Raced Street 10',
      site: 'https://raced.example',
      messenger: 'https://chat.example/raced',
      network_a: 'https://network-a.example/raced',
      network_b: 'https://network-b.example/raced',
      network_c: 'https://network-c.example/raced',
    };
    const responses = await Promise.all(Object.entries(changes).map(([field, value]) => A.put(id as string, { [field]: value })));
    expect(responses.map((r) => [r.status, r.body.status])).toEqual(responses.map(() => [200, 201]));
    expect(await A.read(id as string)).toMatchObject(changes);
  });
});

describe('DELETE /v1/profiles/{id} (delete)', () => {
  it('answers 200 with the id and the message, then the profile is gone', async () => {
    const email = uniqueEmail();
    const { id } = await A.create({ email });
    const res = await expectStatus(A.del(id as string), 200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({ data: { Profile: { id } }, success: true, status: 200, message: 'Profile deleted successfully.' });
    expectError(await A.get(id as string), 404, 'NOT_FOUND');
    expectError(await A.put(id as string, { name: 'ghost' }), 404, 'NOT_FOUND');
    expectError(await A.del(id as string), 404, 'NOT_FOUND');
    const listed = await expectStatus(A.list({ email }), 200);
    expect(listed.body.data).toEqual([]);
    expect(totalOf(listed)).toBe(0);
  });

  it('works with a trailing slash', async () => {
    const { id } = await A.create({ name: 'slash' });
    expect((await expectStatus(A.del(id as string, true), 200)).body.data).toEqual({ Profile: { id } });
    expectError(await A.get(id as string), 404, 'NOT_FOUND');
  });
});

describe('field validation', () => {
  const invalid: [string, unknown][] = [
    ['tel', -1],
    ['tel', 1.5],
    ['tel', '12a'],
    ['tel', '-1'],
    ['tel', ' 123'],
    ['tel', '+982188776655'],
    ['tel', '1'.repeat(21)],
    ['tel', true],
    ['tel', { number: 1 }],
    ['email', 'not-an-email'],
    ['email', 'missing-domain@'],
    ['email', '@example.com'],
    ['email', 'two words@example.com'],
    ['email', `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.com`],
    ['email', 42],
    ['slug', 'has-dash'],
    ['slug', 'has space'],
    ['slug', 'under_score'],
    ['slug', 'ünïcode'],
    ['slug', 'a'.repeat(65)],
    ['slug', 12345],
    ['name', 42],
    ['name', ['list']],
  ];

  const invalidCases = invalid.map(([field, value]) => ({ field, value, shown: show(value) }));

  it.each(invalidCases)('refuses $field = $shown on create with 400 naming the field', async ({ field, value }) => {
    expectError(await A.post({ name: 'valid', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
  });

  it.each(invalidCases)('refuses $field = $shown on update with 400 naming the field, changing nothing', async ({ field, value }) => {
    const before = await A.create({ name: 'valid' });
    expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
    expect(await A.read(before.id as string)).toEqual(before);
  });

  it.each(TEXT_LIMITS)('takes %s of %i characters and refuses one more', async (field, max) => {
    const atMax = await A.create({ [field]: 'x'.repeat(max) });
    expect(atMax[field]).toBe('x'.repeat(max));
    expectError(await A.post({ [field]: 'x'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
    expectError(await A.put(atMax.id as string, { [field]: 'y'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
  });

  it('takes the longest valid values of tel, email and slug', async () => {
    const body = {
      tel: '9'.repeat(20),
      email: `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
      slug: `${uid('L')}${'z'.repeat(64)}`.slice(0, 64),
    };
    expect(body.email).toHaveLength(254);
    expect(await A.create(body)).toMatchObject(body);
  });

  it.each(['id', 'logo', 'signature', 'default', 'created', 'colour', 'Name'])(
    'refuses the field %s on create and on update with 400 naming it',
    async (field) => {
      const value = field === 'default' || field === 'created' ? 1 : 'x';
      expectError(await A.post({ name: 'valid', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      const before = await A.create({ name: 'valid' });
      expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      expect(await A.read(before.id as string)).toEqual(before);
    },
  );

  it('reports every fault of one request, and stores nothing', async () => {
    const email = uniqueEmail();
    const body = { email, tel: 'x', slug: 'not-valid', name: 'n'.repeat(256), logo: 'https://img.example/logo.png', colour: 'blue' };
    const res = await A.post(body);
    expectError(res, 400, 'VALIDATION_FAILED', ['tel', 'slug', 'name', 'logo', 'colour']);
    expect(res.body.error.details.map((d: Rec) => d.field)).not.toContain('email');
    expect(totalOf(await expectStatus(A.list({ email }), 200))).toBe(0);
  });

  it('refuses a body that is not a JSON object', async () => {
    expectError(await A.post([{ name: 'in an array' }]), 400, /^(VALIDATION_FAILED|MALFORMED_JSON)$/);
  });
});

describe('slug uniqueness', () => {
  it.each<[string, typeof A, (slug: string) => string]>([
    ['the same account, same case', A, (s) => s],
    ['the same account, other case', A, (s) => s.toUpperCase()],
    ['another token of the same account', A2, (s) => s],
    ['another account, same case', B, (s) => s],
    ['another account, other case', B, (s) => s.toLowerCase()],
  ])('refuses a slug taken by %s with 409 CONFLICT', async (_label, who, variant) => {
    const slug = uid('Taken');
    await A.create({ slug });
    expectError(await who.post({ slug: variant(slug) }), 409, 'CONFLICT');
  });

  it('refuses to change a slug to a taken one, leaving the profile as it was', async () => {
    const taken = uid('Held');
    await B.create({ slug: taken });
    const before = await A.create({ slug: uid('mine') });
    expectError(await A.put(before.id as string, { slug: taken.toLowerCase() }), 409, 'CONFLICT');
    expect(await A.read(before.id as string)).toEqual(before);
  });

  it('frees the old slug at once when a profile changes it', async () => {
    const [oldSlug, newSlug] = [uid('old'), uid('new')];
    const { id } = await A.create({ slug: oldSlug });
    expect((await expectStatus(A.put(id as string, { slug: newSlug }), 200)).body.data.Profile.slug).toBe(newSlug);
    expect((await B.create({ slug: oldSlug })).slug).toBe(oldSlug);
    expectError(await B.post({ slug: newSlug }), 409, 'CONFLICT');
  });

  it.each([
    ['""', ''],
    ['null', null],
  ])('frees the slug when a profile clears it with %s', async (_label, empty) => {
    const slug = uid('clear');
    const { id } = await A.create({ slug });
    await expectStatus(A.put(id as string, { slug: empty }), 200);
    expect((await B.create({ slug })).slug).toBe(slug);
  });

  it('frees the slug when its profile is deleted', async () => {
    const slug = uid('gone');
    const { id } = await A.create({ slug });
    await expectStatus(A.del(id as string), 200);
    expect((await B.create({ slug: slug.toUpperCase() })).slug).toBe(slug.toUpperCase());
  });

  it("lets a profile change only the case of its own slug, which stays taken", async () => {
    const slug = uid('case');
    const { id } = await A.create({ slug });
    const res = await expectStatus(A.put(id as string, { slug: slug.toUpperCase() }), 200);
    expect(res.body.data.Profile.slug).toBe(slug.toUpperCase());
    expect((await A.read(id as string)).slug).toBe(slug.toUpperCase());
    expectError(await B.post({ slug }), 409, 'CONFLICT');
  });

  it('lets a profile send its own slug again', async () => {
    const slug = uid('own');
    const before = await A.create({ slug });
    expect((await expectStatus(A.put(before.id as string, { slug, name: 'renamed' }), 200)).body.data.Profile).toEqual({
      ...before,
      name: 'renamed',
    });
  });

  it('gives a slug to exactly one of 8 concurrent creates; the other 7 get 409', async () => {
    const slug = uid('race');
    const clients = [A, A2, B];
    const responses = await Promise.all(Array.from({ length: 8 }, (_, i) => clients[i % 3].post({ slug })));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of responses.filter((r) => r.status === 409)) expectError(r, 409, 'CONFLICT');
    const holders = await Promise.all([A, B].map(async (who) => totalOf(await expectStatus(who.list({ slug }), 200))));
    expect(holders[0] + holders[1]).toBe(1);
  });

  it('gives a slug to exactly one of 5 concurrent updates; the other 4 get 409', async () => {
    const slug = uid('urace');
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await A.create({ name: `u${i}` })).id as string);
    const responses = await Promise.all(ids.map((id) => A.put(id, { slug })));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const listed = await expectStatus(A.list({ slug }), 200);
    expect(idsOf(listed)).toEqual([ids[responses.findIndex((r) => r.status === 200)]]);
  });
});
