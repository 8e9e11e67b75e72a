/**
 * /v1/profiles end to end, over HTTP only: docs/api.md ("Profiles") and its rules.
 * One app serves the file; the describes that count records exactly start their own.
 */
import {
  expectCreatedNow,
  expectError,
  expectStatus,
  expectSuccess,
  LONGEST_EMAIL,
  PROFILES,
  Rec,
  resourceClient,
  ResourceSuite,
  SeededList,
  totalOf,
  uid,
  uniqueEmail,
  uniqueTel,
  UUID_V4,
} from '../support/http-assertions';
import { freshApp, startTestApp, TestApp } from '../support/test-app';

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

/** The profile operations as one token sees them. */
const client = (app: () => TestApp, token?: string) => resourceClient(app, PROFILES, token);

const suite = new ResourceSuite(freshApp(), PROFILES);
const { A, A2, B, idsOf, expectListed } = suite;

describe('POST /v1/profiles (create)', () => {
  it('answers 201 with the full record; integer digit fields come back as digit strings', async () => {
    const body = { ...SAMPLE, tel: 2188776655, slug: uid('acme') };
    const res = await expectStatus(A.post(body), 201);
    expectSuccess(res, 201, {
      Profile: {
        ...body,
        tel: '2188776655',
        id: expect.stringMatching(UUID_V4),
        logo: '',
        signature: '',
        default: expect.any(Number),
        created: expect.any(Number),
      },
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
    ['Persian digits', '۰۲۱۸۸۷۷۶۶۵۵', '02188776655'],
    ['Arabic-Indic digits', '٠٢١٨٨٧٧٦٦٥٥', '02188776655'],
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

  suite.itCreatesOnBothCollectionPaths();
  suite.itListsEachNewRecordAtOnce();
});

describe('the default flag', () => {
  // Each test starts from two empty accounts of its own: one app, with a pair of tokens per test.
  const tests = 3;
  const tokens = Array.from({ length: tests }, (_, n) => [`default-mine-${n}`, `default-theirs-${n}`]);
  let own: TestApp;
  beforeAll(async () => (own = await startTestApp({ accounts: new Map(tokens.flat().map((token) => [token, `account-${token}`])) })));
  afterAll(() => own.close());
  let turn = -1;
  beforeEach(() => void turn++);
  /** The client of this test's account on `side` (0 mine, 1 theirs). */
  const ofThisTest = (side: 0 | 1) =>
    new Proxy({} as ReturnType<typeof client>, { get: (_, key: keyof ReturnType<typeof client>) => client(() => own, tokens[turn][side])[key] });
  const mine = ofThisTest(0);
  const theirs = ofThisTest(1);
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
    const ids: string[] = [];
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
    const list = new SeededList(PROFILES, (i) => ({ name: `p${i}` }));

    it('answers 200 with full-record wrappers, the 10 newest first by default', async () => {
      const res = await expectStatus(list.mine.list(), 200);
      expectSuccess(res, 200, expect.any(Array));
      expect(idsOf(res)).toEqual(list.ids().slice(0, 10));
      expect(totalOf(res)).toBe(25);
      const [newest] = res.body.data;
      expect(newest).toEqual({ Profile: await list.mine.read(list.ids()[0]) });
    });

    list.itPagesTheList();

    it('answers the same on /v1/profiles/', async () => {
      expect(idsOf(await expectStatus(list.mine.list({ limit: 100 }, 'profiles/'), 200))).toEqual(list.ids());
    });

    list.itListsForTheAccountOnly();
  });

  describe('filters', () => {
    suite.itFiltersEmailExactly('shop');

    it('matches tel exactly', async () => {
      const tel = uniqueTel();
      const zero = await A.create({ tel: `0${tel}` });
      const plain = await A.create({ tel: Number(tel) });
      await A.create({ tel: `${tel}1` });
      await expectListed({ tel }, [plain]);
      await expectListed({ tel: `0${tel}` }, [zero]);
      await expectListed({ tel: `۰${tel}`.replace(/\d/g, (d) => String.fromCharCode(0x06f0 + Number(d))) }, [zero]);
      await expectListed({ tel: tel.replace(/\d/g, (d) => String.fromCharCode(0x0660 + Number(d))) }, [plain]);
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

    suite.itCountsAndScopesFilteredLists();
  });
});

describe('GET /v1/profiles/{id} (read one)', () => {
  suite.itReadsOne(() => ({ ...SAMPLE, slug: uid('read') }));
});

describe('unknown, malformed and foreign ids', () => {
  suite.itAnswers404ToBadIds();
});

describe('PUT /v1/profiles/{id} (update)', () => {
  const full = () => ({ ...SAMPLE, slug: uid('upd') });

  suite.itUpdatesTheFieldsSent(full);
  suite.itClearsFieldsSentEmpty(() => ({ ...SAMPLE, slug: uid('clr') }), ['description', 'tel', 'email', 'site', 'slug']);

  it('keeps leading zeros of a tel string', async () => {
    const { id } = await A.create({ tel: 123 });
    expect((await expectStatus(A.put(id as string, { tel: '000123' }), 200)).body.data.Profile.tel).toBe('000123');
    expect((await A.read(id as string)).tel).toBe('000123');
  });

  suite.itAnswersUnchangedRecords(
    () => ({ ...SAMPLE, tel: '12345', slug: uid('same') }),
    (p) => ({ name: p.name, tel: Number(p.tel), slug: p.slug }),
  );
  suite.itUpdatesThroughEitherPathAndToken();

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
  suite.itDeletes();
});

describe('field validation', () => {
  const valid = () => ({ name: 'valid' });
  suite.itRefusesInvalidValues({
    digitFields: ['tel'],
    more: [
      ['slug', 'has-dash'],
      ['slug', 'has space'],
      ['slug', 'under_score'],
      ['slug', 'ünïcode'],
      ['slug', 'a'.repeat(65)],
      ['slug', 12345],
      ['name', 42],
      ['name', ['list']],
    ],
    valid,
  });
  suite.itLimitsTextLengths(TEXT_LIMITS);

  it('takes the longest valid values of tel, email and slug', async () => {
    const body = { tel: '9'.repeat(20), email: LONGEST_EMAIL, slug: `${uid('L')}${'z'.repeat(64)}`.slice(0, 64) };
    expect(body.email).toHaveLength(254);
    expect(await A.create(body)).toMatchObject(body);
  });

  suite.itRefusesUnknownFields(['id', 'logo', 'signature', 'default', 'created', 'colour', 'Name'], valid);
  suite.itReportsEveryFault(
    (email) => ({ email, tel: 'x', slug: 'not-valid', name: 'n'.repeat(256), logo: 'https://img.example/logo.png', colour: 'blue' }),
    ['tel', 'slug', 'name', 'logo', 'colour'],
  );

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

  it('lets a profile change only the case of its own slug, which stays taken', async () => {
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
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await A.create({ name: `u${i}` })).id as string);
    const responses = await Promise.all(ids.map((id) => A.put(id, { slug })));
    expect(responses.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const listed = await expectStatus(A.list({ slug }), 200);
    expect(idsOf(listed)).toEqual([ids[responses.findIndex((r) => r.status === 200)]]);
  });
});
