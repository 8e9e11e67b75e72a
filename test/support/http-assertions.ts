/**
 * What the e2e suites share: response assertions, unique values, a client for one resource as one token
 * sees it, and the tests that /v1/profiles and /v1/customers run alike, parameterised by the resource.
 */
import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { CUSTOMER_SHORT_FIELDS as CUSTOMER_VIEW_SHORT_FIELDS } from '../../src/customers/customer.view';
import { RUN_ID } from './stores';
import { freshApp, JSON_CT, Query, TestApp, TOKENS, withQuery, withToken } from './test-app';

export type Rec = Record<string, unknown>;

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// ---------------------------------------------------------------- unique values

let seq = 0;
/**
 * A value unique within a test file's run (Jest loads this module afresh per file; on live stores it
 * also carries the file's run id), letters and digits only (so also a valid slug); never a substring
 * of another one.
 */
export const uid = (prefix = 'u') => `${prefix}${++seq}x${RUN_ID}`;
export const uniqueEmail = () => `${uid('mail')}@example.com`;
export const uniqueTel = () => String(7_000_000 + ++seq);
export const uniqueMobile = () => `0912${String(++seq).padStart(7, '0')}`;
/** The least a customer needs: an e-mail address. */
export const contact = () => ({ email: uniqueEmail() });

/** A test-title form of a value: long strings by their length. */
export const show = (value: unknown) => (typeof value === 'string' && value.length > 30 ? `a ${value.length}-character string` : JSON.stringify(value));

/** 254 characters, the longest valid address. */
export const LONGEST_EMAIL = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
export const INVALID_EMAILS: unknown[] = [
  'not-an-email',
  'missing-domain@',
  '@example.com',
  'two words@example.com',
  `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.com`,
  42,
];
/** Values a digit field (tel, postal code, fax, ...) refuses. */
export const INVALID_DIGITS: unknown[] = [-1, 1.5, '12a', '-1', ' 123', '+982188776655', '+98212', '1'.repeat(21), true, { number: 1 }, { n: 1 }];
/** `[field, value]` for each of the values. */
const casesOf = (field: string, values: unknown[]): [string, unknown][] => values.map((value) => [field, value]);

// ---------------------------------------------------------------- assertions

/** Fails with the response body in view when the status is not the one expected. */
export async function expectStatus(req: PromiseLike<Response>, status: number): Promise<Response> {
  const res = await req;
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  return res;
}

const codeMatcher = (code: string | RegExp) => (typeof code === 'string' ? code : expect.stringMatching(code));

function expectFieldFaults(details: unknown[]): void {
  for (const fault of details) expect(fault).toEqual({ field: expect.any(String), message: expect.any(String) });
}

/** The error envelope, as JSON, with at least these fields among the details. */
export function expectError(res: Response, status: number, code: string | RegExp, fields: string[] = []): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  expect(res.headers['content-type']).toBe(JSON_CT);
  expect(res.body).toEqual({ success: false, status, error: expect.objectContaining({ code: codeMatcher(code), message: expect.any(String) }) });
  const details: Rec[] = res.body.error.details ?? [];
  expectFieldFaults(details);
  expect(details.map((d) => d.field)).toEqual(expect.arrayContaining(fields));
}

/**
 * The error envelope exactly, nothing more in the body or the error. `details: false`: none may be sent;
 * `true`: a non-empty list of field faults must be; left out: if sent, it is such a list.
 */
export function expectExactError(res: Response, status: number, code: string | RegExp, options: { details?: boolean } = {}): void {
  expect({ status: res.status, contentType: res.headers['content-type'] }).toEqual({ status, contentType: JSON_CT });
  const { success, status: bodyStatus, error, ...rest } = res.body;
  expect({ success, status: bodyStatus, rest }).toEqual({ success: false, status, rest: {} });
  const { code: sentCode, message, details, ...extra } = error ?? {};
  expect(sentCode).toEqual(codeMatcher(code));
  expect(message).toEqual(expect.stringMatching(/\S/));
  expect(extra).toEqual({});
  if (options.details === false) expect(error).not.toHaveProperty('details');
  if (options.details || details !== undefined) {
    expect(details).toEqual(expect.any(Array));
    expect(details.length).toBeGreaterThan(0);
    expectFieldFaults(details);
  }
}

/** A success answer: JSON, with exactly this data, status and any further members. */
export function expectSuccess(res: Response, status: number, data: unknown, more: Rec = {}): void {
  expect(res.headers['content-type']).toBe(JSON_CT);
  expect(res.body).toEqual({ data, success: true, status, ...more });
}

export function expectCreatedNow(created: unknown): void {
  expect(Number.isInteger(created)).toBe(true);
  expect(Math.abs((created as number) - Date.now() / 1000)).toBeLessThan(10);
}

export const totalOf = (res: Response) => Number(res.headers['x-total-count']);

// ---------------------------------------------------------------- resources and clients

export interface ResourceSpec {
  /** The collection under /v1, also the plural noun in test titles. */
  path: 'profiles' | 'customers';
  /** What wraps each record in the answers: `{ Profile: {...} }`. */
  key: 'Profile' | 'Customer';
  noun: 'profile' | 'customer';
  /** A fresh least valid create body. */
  minimal: () => Rec;
  /** Which record read, list and update answer: the full one, or a short one. */
  readForm: 'full' | 'short';
  /** A record as read, list and update answer it, from the record create answered. */
  asRead: (created: Rec) => Rec;
}

export const PROFILES: ResourceSpec = {
  path: 'profiles',
  key: 'Profile',
  noun: 'profile',
  minimal: () => ({}),
  readForm: 'full',
  asRead: (created) => created,
};

/** What customer list, read and update answer (the view's short set); create answers every field. */
const CUSTOMER_SHORT_FIELDS = ['id', ...CUSTOMER_VIEW_SHORT_FIELDS, 'created'];

export const CUSTOMERS: ResourceSpec = {
  path: 'customers',
  key: 'Customer',
  noun: 'customer',
  minimal: contact,
  readForm: 'short',
  asRead: (created) => Object.fromEntries(CUSTOMER_SHORT_FIELDS.map((f) => [f, created[f]])),
};

/** The record ids of a list answer, in order. */
export const idsOf = (res: Response, key: ResourceSpec['key']): string[] => res.body.data.map((w: Record<string, Rec>) => w[key].id);

/** The operations on one resource as one token sees them. */
export function resourceClient(app: () => TestApp, spec: ResourceSpec, token: string = TOKENS.a) {
  const http = () => app().http;
  const item = (id: string, slash: boolean) => withToken(`${spec.path}/${id}${slash ? '/' : ''}`, token);
  const post = (body: unknown, path: string = spec.path) =>
    http()
      .post(withToken(path, token))
      .send(body as object);
  const list = (query: Query = {}, path: string = spec.path) => http().get(withToken(withQuery(path, query), token));
  const get = (id: string, slash = false) => http().get(item(id, slash));
  const put = (id: string, body: unknown, slash = false) =>
    http()
      .put(item(id, slash))
      .send(body as object);
  const del = (id: string, slash = false) => http().delete(item(id, slash));
  const create = async (body: Rec = {}): Promise<Rec> => (await expectStatus(post(body), 201)).body.data[spec.key];
  const read = async (id: string): Promise<Rec> => (await expectStatus(get(id), 200)).body.data[0][spec.key];
  return { spec, post, list, get, put, del, create, read, idsOf: (res: Response) => idsOf(res, spec.key) };
}

export type ResourceClient = ReturnType<typeof resourceClient>;

/** Lists with the query and expects exactly these records, newest first. */
async function expectListedBy(who: ResourceClient, query: Query, expected: Rec[]): Promise<void> {
  const res = await expectStatus(who.list({ ...query, limit: 100 }), 200);
  expect(who.idsOf(res)).toEqual(expected.map((r) => r.id));
  expect(totalOf(res)).toBe(expected.length);
}

/**
 * One resource on one app, through account A's first (`A`) and second (`A2`) token and account B's (`B`),
 * with the tests /v1/profiles and /v1/customers share, each added to the enclosing describe.
 */
export class ResourceSuite {
  readonly A: ResourceClient;
  readonly A2: ResourceClient;
  readonly B: ResourceClient;

  constructor(
    app: () => TestApp,
    readonly spec: ResourceSpec,
  ) {
    this.A = resourceClient(app, spec);
    this.A2 = resourceClient(app, spec, TOKENS.a2);
    this.B = resourceClient(app, spec, TOKENS.b);
  }

  /** The record ids of a list answer, in order. */
  readonly idsOf = (res: Response): string[] => idsOf(res, this.spec.key);

  /** Lists with the query (as A unless told) and expects exactly these records, newest first. */
  readonly expectListed = (query: Query, expected: Rec[], who: ResourceClient = this.A) => expectListedBy(who, query, expected);

  // -------------------------------------------------------------- create

  itCreatesOnBothCollectionPaths(): void {
    const { A, spec } = this;
    it.each([spec.path, `${spec.path}/`])('works on the collection path %s', async (collection) => {
      const res = await expectStatus(A.post({ ...spec.minimal(), name: 'Path' }, collection), 201);
      expect((await A.read(res.body.data[spec.key].id)).name).toBe('Path');
    });
  }

  itListsEachNewRecordAtOnce(): void {
    const { A } = this;
    it(`shows each new ${this.spec.noun} in the very next list (read-your-writes, 20 times)`, async () => {
      const email = uniqueEmail();
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const { id } = await A.create({ email, name: `ryw ${i}` });
        ids.unshift(id as string);
        const res = await expectStatus(A.list({ email, limit: 100 }), 200);
        expect(A.idsOf(res)).toEqual(ids);
        expect(totalOf(res)).toBe(i + 1);
      }
      expect(new Set(ids).size).toBe(20);
    });
  }

  // -------------------------------------------------------------- list filters

  /** The email filter: exact, ignoring case; `word` starts the addresses. */
  itFiltersEmailExactly(word: string): void {
    const { A, expectListed } = this;
    const Word = word[0].toUpperCase() + word.slice(1);
    it('matches email exactly, ignoring case', async () => {
      const tag = uid(word);
      const hit = await A.create({ email: `${Word}.${tag}@Example.com` });
      await A.create({ email: `${word}.${tag}@example.com.au` });
      await A.create({ email: `x.${word}.${tag}@example.com` });
      await expectListed({ email: `${word.toUpperCase()}.${tag}@EXAMPLE.COM` }, [hit]);
      await expectListed({ email: `${word}.${tag}@example` }, []);
    });
  }

  /** A filtered list counts every match while paging, and holds only the caller's account's records. */
  itCountsAndScopesFilteredLists(): void {
    const { A, A2, B, expectListed } = this;
    it('counts every match in X-Total-Count while paging', async () => {
      const email = uniqueEmail();
      const made = [];
      for (let i = 0; i < 3; i++) made.unshift(await A.create({ email }));
      const firstPage = await expectStatus(A.list({ email, limit: 1 }), 200);
      expect(A.idsOf(firstPage)).toEqual([made[0].id]);
      expect(totalOf(firstPage)).toBe(3);
      const secondPage = await expectStatus(A.list({ email, limit: 1, page: 2 }), 200);
      expect(A.idsOf(secondPage)).toEqual([made[1].id]);
      expect(totalOf(secondPage)).toBe(3);
    });

    it(`never shows another account's ${this.spec.path}`, async () => {
      const email = uniqueEmail();
      const ours = await A.create({ email });
      await B.create({ email });
      await expectListed({ email }, [ours]);
      await expectListed({ email }, [ours], A2);
    });
  }

  // -------------------------------------------------------------- read one, unknown ids

  /** `full()`: a create body with many fields filled in. */
  itReadsOne(full: () => Rec): void {
    const { A, A2 } = this;
    const { key, readForm, asRead, minimal } = this.spec;
    it(`answers 200 with an array holding the one ${readForm} record`, async () => {
      const created = await A.create(full());
      expectSuccess(await expectStatus(A.get(created.id as string), 200), 200, [{ [key]: asRead(created) }]);
    });

    it('works with a trailing slash and for every token of the account', async () => {
      const created = await A.create({ ...minimal(), name: 'slash' });
      expect((await expectStatus(A.get(created.id as string, true), 200)).body.data).toEqual([{ [key]: asRead(created) }]);
      expect((await expectStatus(A2.get(created.id as string), 200)).body.data).toEqual([{ [key]: asRead(created) }]);
    });
  }

  /** GET, PUT and DELETE of unknown and malformed ids and of another account's record answer 404, changing nothing. */
  itAnswers404ToBadIds(): void {
    const { A, B } = this;
    const { noun, minimal, asRead } = this.spec;
    const theirs = async () => B.create({ ...minimal(), name: 'theirs' });
    const badIds: [string, () => Promise<string>][] = [
      ['an unknown UUID v4', async () => randomUUID()],
      ['"abc"', async () => 'abc'],
      ['36 characters of garbage', async () => 'z'.repeat(36)],
      ['a UUID shape with non-hex characters', async () => 'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz'],
      ['a UUID with one character too many', async () => `${randomUUID()}a`],
      [`another account's ${noun}`, async () => (await theirs()).id as string],
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

    it(`leaves another account's ${noun} untouched after their attempts`, async () => {
      const record = await theirs();
      expectError(await A.put(record.id as string, { name: 'mine now' }), 404, 'NOT_FOUND');
      expectError(await A.del(record.id as string), 404, 'NOT_FOUND');
      expect(await B.read(record.id as string)).toEqual(asRead(record));
    });
  }

  // -------------------------------------------------------------- update, delete

  /** `full()`: a create body with many fields filled in, tel among them. */
  itUpdatesTheFieldsSent(full: () => Rec): void {
    const { A } = this;
    const { key, readForm, asRead } = this.spec;
    it(`changes the fields sent, keeps the others, and answers the ${readForm} record with HTTP 200 and body status 201`, async () => {
      const before = await A.create(full());
      const res = await expectStatus(A.put(before.id as string, { name: 'Renamed', tel: 9876 }), 200);
      const after = { ...asRead(before), name: 'Renamed', tel: '9876' };
      expectSuccess(res, 201, { [key]: after });
      expect(await A.read(before.id as string)).toEqual(after);
    });
  }

  /** `fields` sent as "" or null are cleared to "". */
  itClearsFieldsSentEmpty(full: () => Rec, fields: string[]): void {
    const { A } = this;
    const { key, asRead } = this.spec;
    it.each([
      ['""', ''],
      ['null', null],
    ])('clears fields sent as %s', async (_label, empty) => {
      const before = await A.create(full());
      const res = await expectStatus(A.put(before.id as string, Object.fromEntries(fields.map((f) => [f, empty]))), 200);
      const after = { ...asRead(before), ...Object.fromEntries(fields.map((f) => [f, ''])) };
      expect(res.body.data[key]).toEqual(after);
      expect(await A.read(before.id as string)).toEqual(after);
    });
  }

  /** An update with the record's own values (`sameAs`) or with nothing answers the record as it was. */
  itAnswersUnchangedRecords(body: () => Rec, sameAs: (record: Rec) => Rec): void {
    const { A } = this;
    const { key, asRead } = this.spec;
    it.each([
      ['the same values', sameAs],
      ['an empty body', () => ({})],
    ])('answers the record unchanged when sent %s', async (_label, bodyOf) => {
      const before = await A.create(body());
      const res = await expectStatus(A.put(before.id as string, bodyOf(before)), 200);
      expect(res.body).toEqual({ data: { [key]: asRead(before) }, success: true, status: 201 });
      expect(await A.read(before.id as string)).toEqual(asRead(before));
    });
  }

  itUpdatesThroughEitherPathAndToken(): void {
    const { A, A2 } = this;
    const { key, minimal } = this.spec;
    it('works with a trailing slash and from another token of the account', async () => {
      const { id } = await A.create({ ...minimal(), name: 'old' });
      expect((await expectStatus(A.put(id as string, { name: 'slash' }, true), 200)).body.data[key].name).toBe('slash');
      expect((await expectStatus(A2.put(id as string, { address: 'second token' }), 200)).body.data[key]).toMatchObject({
        name: 'slash',
        address: 'second token',
      });
    });
  }

  /** Both DELETE tests: the answer, then the record gone from read, update, delete and list. */
  itDeletes(): void {
    const { A } = this;
    const { key, noun, minimal } = this.spec;
    it(`answers 200 with the id and the message, then the ${noun} is gone`, async () => {
      const email = uniqueEmail();
      const { id } = await A.create({ email });
      const res = await expectStatus(A.del(id as string), 200);
      expectSuccess(res, 200, { [key]: { id } }, { message: `${key} deleted successfully.` });
      expectError(await A.get(id as string), 404, 'NOT_FOUND');
      expectError(await A.put(id as string, { name: 'ghost' }), 404, 'NOT_FOUND');
      expectError(await A.del(id as string), 404, 'NOT_FOUND');
      const listed = await expectStatus(A.list({ email }), 200);
      expect(listed.body.data).toEqual([]);
      expect(totalOf(listed)).toBe(0);
    });

    it('works with a trailing slash', async () => {
      const { id } = await A.create({ ...minimal(), name: 'slash' });
      expect((await expectStatus(A.del(id as string, true), 200)).body.data).toEqual({ [key]: { id } });
      expectError(await A.get(id as string), 404, 'NOT_FOUND');
    });
  }

  // -------------------------------------------------------------- field validation

  /**
   * Each invalid value is refused with 400 naming the field: on create, and (where `updatable`) on update,
   * which changes nothing. The cases: every value in INVALID_DIGITS for each of `digitFields`, then `more`,
   * then every value in INVALID_EMAILS for email. `valid()`: a create body with no fault of its own.
   */
  itRefusesInvalidValues(options: { digitFields: string[]; more: [string, unknown][]; valid: () => Rec; updatable?: (field: string) => boolean }): void {
    const { A } = this;
    const { digitFields, more, valid, updatable = () => true } = options;
    const invalid: [string, unknown][] = [...digitFields.flatMap((field) => casesOf(field, INVALID_DIGITS)), ...more, ...casesOf('email', INVALID_EMAILS)];
    const cases = invalid.map(([field, value]) => ({ field, value, shown: show(value) }));

    it.each(cases)('refuses $field = $shown on create with 400 naming the field', async ({ field, value }) => {
      expectError(await A.post({ ...valid(), [field]: value }), 400, 'VALIDATION_FAILED', [field]);
    });

    it.each(cases.filter(({ field }) => updatable(field)))(
      'refuses $field = $shown on update with 400 naming the field, changing nothing',
      async ({ field, value }) => {
        const before = await A.create({ ...valid(), name: 'valid' });
        expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
        expect(await A.read(before.id as string)).toEqual(this.spec.asRead(before));
      },
    );
  }

  /** Each `[field, max]`: a text of max characters is taken, one more is refused on create and update. */
  itLimitsTextLengths(limits: [string, number][]): void {
    const { A } = this;
    const { minimal } = this.spec;
    it.each(limits)('takes %s of %i characters and refuses one more', async (field, max) => {
      const atMax = await A.create({ ...minimal(), [field]: 'x'.repeat(max) });
      expect(atMax[field]).toBe('x'.repeat(max));
      expectError(await A.post({ ...minimal(), [field]: 'x'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
      expectError(await A.put(atMax.id as string, { [field]: 'y'.repeat(max + 1) }), 400, 'VALIDATION_FAILED', [field]);
    });
  }

  /** Fields the resource does not take, on create and on update. `valid()`: a create body with no fault of its own. */
  itRefusesUnknownFields(fields: string[], valid: () => Rec): void {
    const { A } = this;
    it.each(fields)('refuses the field %s on create and on update with 400 naming it', async (field) => {
      const value = field === 'default' || field === 'created' ? 1 : 'x';
      expectError(await A.post({ ...valid(), [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      const before = await A.create({ ...valid(), name: 'valid' });
      expectError(await A.put(before.id as string, { name: 'changed', [field]: value }), 400, 'VALIDATION_FAILED', [field]);
      expect(await A.read(before.id as string)).toEqual(this.spec.asRead(before));
    });
  }

  /** `bodyWith(email)`: a create body with a valid email and faults in exactly `fields`. */
  itReportsEveryFault(bodyWith: (email: string) => Rec, fields: string[]): void {
    const { A } = this;
    it('reports every fault of one request, and stores nothing', async () => {
      const email = uniqueEmail();
      const res = await A.post(bodyWith(email));
      expectError(res, 400, 'VALIDATION_FAILED', fields);
      expect(res.body.error.details.map((d: Rec) => d.field)).not.toContain('email');
      expect(totalOf(await expectStatus(A.list({ email }), 200))).toBe(0);
    });
  }
}

// ---------------------------------------------------------------- a seeded list

/** The size of a seeded list; the paging tables count on it. */
const SEEDED = 25;

/**
 * A fresh app for the enclosing describe, where account A creates 25 records, the i-th with `bodyOf(i)`,
 * and the tests of order, paging and account scoping every list passes on them.
 */
export class SeededList {
  readonly app = freshApp();
  /** Account A on the list's own app. */
  readonly mine: ResourceClient;
  private newestFirst: Rec[] = [];

  constructor(spec: ResourceSpec, bodyOf: (i: number) => Rec) {
    this.mine = resourceClient(this.app, spec);
    beforeAll(async () => {
      const made = [];
      for (let i = 0; i < SEEDED; i++) made.push(await this.mine.create(bodyOf(i)));
      this.newestFirst = made.reverse();
    });
  }

  /** The records as create answered them, newest first. */
  records = (): Rec[] => this.newestFirst;
  ids = (): string[] => this.newestFirst.map((r) => r.id as string);

  /** Order and paging, refused and ignored parameters. */
  itPagesTheList(): void {
    const { mine, ids } = this;
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
      expect(mine.idsOf(res)).toEqual(ids().slice(from, to));
      expect(totalOf(res)).toBe(SEEDED);
    });

    it('keeps the order stable across pages: every record exactly once', async () => {
      const seen: string[] = [];
      for (let page = 1; page <= 7; page++) seen.push(...mine.idsOf(await expectStatus(mine.list({ page, limit: 4 }), 200)));
      expect(seen).toEqual(ids());
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

    it('pages with after, the X-Next-Cursor of the page before: every record exactly once, no cursor after a short page', async () => {
      const seen: string[] = [];
      let res = await expectStatus(mine.list({ limit: 10 }), 200);
      for (;;) {
        seen.push(...mine.idsOf(res));
        expect(totalOf(res)).toBe(SEEDED);
        const next = res.headers['x-next-cursor'];
        if (next === undefined) break;
        res = await expectStatus(mine.list({ limit: 10, after: next }), 200);
      }
      expect(seen).toEqual(ids());
      // 25 in pages of 10: two full pages with a cursor, then a short one without.
      expect(res.body.data).toHaveLength(5);
    });

    it.each<[Query, string]>([
      [{ after: 'not-a-cursor' }, 'after'],
      [{ offset: 10_001 }, 'offset'],
      [{ page: 1_002 }, 'page'],
    ])('refuses %j with 400 naming %s', async (query, field) => {
      expectError(await mine.list(query), 400, 'VALIDATION_FAILED', [field]);
    });

    it('refuses after with offset or page, naming after', async () => {
      const next = (await expectStatus(mine.list({ limit: 5 }), 200)).headers['x-next-cursor'];
      expectError(await mine.list({ after: next, offset: 5 }), 400, 'VALIDATION_FAILED', ['after']);
    });

    it('ignores unknown query parameters', async () => {
      const res = await expectStatus(mine.list({ limit: 5, colour: 'blue', sort: 'name' }), 200);
      expect(mine.idsOf(res)).toEqual(ids().slice(0, 5));
    });
  }

  /** The list is the same through the account's other token, and empty for another account. */
  itListsForTheAccountOnly(): void {
    const { app, mine, ids } = this;
    it(`shows an account's ${mine.spec.path} to its every token and to no other account`, async () => {
      const sameAccount = await expectStatus(resourceClient(app, mine.spec, TOKENS.a2).list({ limit: 100 }), 200);
      expect(mine.idsOf(sameAccount)).toEqual(ids());
      const other = await expectStatus(resourceClient(app, mine.spec, TOKENS.b).list(), 200);
      expect(other.body.data).toEqual([]);
      expect(totalOf(other)).toBe(0);
    });
  }
}
