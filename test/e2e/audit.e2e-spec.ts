import type { Response } from 'supertest';
import { CUSTOMERS, expectError, expectStatus, expectSuccess, PROFILES, Rec, resourceClient, totalOf, uid, uniqueEmail } from '../support/http-assertions';
import { ACCOUNT_IDS, freshApp, TOKENS, withQuery, withToken } from '../support/test-app';

const app = freshApp();

/** Waits until the clock is past the second of `occurred`, so the next event is stored in a later second. */
async function afterSecondOf(occurred: string): Promise<void> {
  const next = (Math.floor(Date.parse(occurred) / 1000) + 1) * 1000;
  while (Date.now() < next) await new Promise((resolve) => setTimeout(resolve, next - Date.now() + 5));
}

const seconds = (occurred: string) => Math.floor(Date.parse(occurred) / 1000);

describe.each([PROFILES, CUSTOMERS])('history and as-of reads of $path', (spec) => {
  const A = resourceClient(app, spec);
  const B = resourceClient(app, spec, TOKENS.b);
  const history = (id: string, query: Rec = {}, token: string = TOKENS.a) =>
    app().http.get(withToken(withQuery(`${spec.path}/${id}/history`, query as Record<string, string>), token));
  const asOf = (id: unknown, when: unknown, token: string = TOKENS.a) =>
    app().http.get(withToken(`${spec.path}/${id as string}?as_of=${encodeURIComponent(String(when))}`, token));
  const entries = (res: Response) => res.body.data as Rec[];

  it('lists create, update and delete oldest first, with field changes; a no-op update adds nothing', async () => {
    const email = uniqueEmail();
    const { id } = await A.create({ ...spec.minimal(), email, name: 'First', tel: 21 });
    await expectStatus(A.put(id as string, { name: 'Second', tel: '' }), 200);
    await expectStatus(A.put(id as string, { name: 'Second' }), 200);
    await expectStatus(A.del(id as string), 200);

    const res = await expectStatus(history(id as string), 200);
    expect(res.headers['x-total-count']).toBe('3');
    const event = (name: string) => `${spec.key}${name}`;
    expectSuccess(res, 200, [
      {
        event: event('Created'),
        revision: 0,
        occurred: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        actor: ACCOUNT_IDS.a,
        // A digit field is a string of digits here as in every response.
        changes: { email: { from: '', to: email }, name: { from: '', to: 'First' }, tel: { from: '', to: '21' } },
      },
      {
        event: event('Updated'),
        revision: 1,
        occurred: expect.any(String),
        actor: ACCOUNT_IDS.a,
        changes: { name: { from: 'First', to: 'Second' }, tel: { from: '21', to: '' } },
      },
      { event: event('Deleted'), revision: 2, occurred: expect.any(String), actor: ACCOUNT_IDS.a, changes: {} },
    ]);
    const times = entries(res).map((e) => Date.parse(e.occurred as string));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(Math.abs(times[0] - Date.now())).toBeLessThan(60_000);
  });

  it('is readable by every token of the owning account, and 404 for others and unknown ids', async () => {
    const { id } = await A.create(spec.minimal());
    await expectStatus(history(id as string, {}, TOKENS.a2), 200);
    expectError(await history(id as string, {}, TOKENS.b), 404, 'NOT_FOUND');
    expectError(await history('0b1f3c3e-8d2a-4c61-9a55-3f0e6b2d7c11'), 404, 'NOT_FOUND');
    expectError(await history('not-a-uuid'), 404, 'NOT_FOUND');
    // Another account's deleted record has no history for you either.
    const theirs = await B.create(spec.minimal());
    await expectStatus(B.del(theirs.id as string), 200);
    expectError(await history(theirs.id as string), 404, 'NOT_FOUND');
  });

  it('pages with limit and offset or page, counting every event in X-Total-Count', async () => {
    const { id } = await A.create(spec.minimal());
    for (let i = 1; i <= 4; i++) await expectStatus(A.put(id as string, { name: `v${i}` }), 200);
    const revisions = (res: Response) => entries(res).map((e) => e.revision);
    const page = await expectStatus(history(id as string, { limit: 2, offset: 1 }), 200);
    expect(revisions(page)).toEqual([1, 2]);
    expect(totalOf(page)).toBe(5);
    expect(revisions(await expectStatus(history(id as string, { limit: 2, page: 3 }), 200))).toEqual([4]);
    expect(revisions(await expectStatus(history(id as string, { offset: 9 }), 200))).toEqual([]);
  });

  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 101 }, 'limit'],
    [{ offset: -1 }, 'offset'],
    [{ page: 'x' }, 'page'],
    [{ offset: 1, page: 1 }, 'page'],
  ])('refuses paging %j naming %s, as lists do', async (query, field) => {
    const { id } = await A.create(spec.minimal());
    expectError(await history(id as string, query), 400, 'VALIDATION_FAILED', [field]);
  });

  it('reads the record as it stood at a second: before, between and after its events', async () => {
    const created = await A.create({ ...spec.minimal(), name: 'Then' });
    const id = created.id as string;
    const read = await A.read(id);
    await afterSecondOf((entries(await history(id)).at(-1) as Rec).occurred as string);
    await expectStatus(A.put(id, { name: 'Now' }), 200);
    await afterSecondOf((entries(await history(id)).at(-1) as Rec).occurred as string);
    await expectStatus(A.del(id), 200);
    const [c, u, d] = entries(await history(id)).map((e) => seconds(e.occurred as string));
    expect(c < u && u < d).toBe(true);

    expectError(await asOf(id, c - 1), 404, 'NOT_FOUND');
    const atCreate = await expectStatus(asOf(id, c), 200);
    // The same shape as a plain read (customers: the short field set), with the ETag of then.
    expectSuccess(atCreate, 200, [{ [spec.key]: read }]);
    expect(atCreate.headers.etag).toBe('"0"');
    for (const second of [u, d - 1]) {
      const atUpdate = await expectStatus(asOf(id, second), 200);
      expect(atUpdate.body.data[0][spec.key]).toEqual({ ...read, name: 'Now' });
      expect(atUpdate.headers.etag).toBe('"1"');
    }
    expectError(await asOf(id, d), 404, 'NOT_FOUND');
    expectError(await asOf(id, Math.floor(Date.now() / 1000) + 3600), 404, 'NOT_FOUND');
    // The deleted record itself answers 404; its history stays.
    await expectStatus(A.get(id), 404);
  });

  it('reads a live record as of now like a plain read', async () => {
    const { id } = await A.create({ ...spec.minimal(), name: uid('live') });
    const plain = await expectStatus(A.get(id as string), 200);
    const now = await expectStatus(asOf(id, Math.floor(Date.now() / 1000) + 60), 200);
    expect(now.body).toEqual(plain.body);
    expect(now.headers.etag).toBe(plain.headers.etag);
  });

  it("answers 404 for another account's record as of any time", async () => {
    const { id } = await A.create(spec.minimal());
    expectError(await asOf(id, Math.floor(Date.now() / 1000) + 60, TOKENS.b), 404, 'NOT_FOUND');
  });

  it.each(['-1', '1.5', 'abc', '', '1e9', ' 5'])('refuses as_of=%j naming as_of', async (value) => {
    const { id } = await A.create(spec.minimal());
    expectError(await asOf(id, value), 400, 'VALIDATION_FAILED', ['as_of']);
  });

  it('refuses as_of given twice', async () => {
    const { id } = await A.create(spec.minimal());
    expectError(await app().http.get(withToken(`${spec.path}/${id as string}?as_of=1&as_of=2`)), 400, 'VALIDATION_FAILED', ['as_of']);
  });
});

describe('long histories', () => {
  const A = resourceClient(app, CUSTOMERS);

  it('answers the first 100 events by default, and the rest on the next page', async () => {
    const { id } = await A.create({ email: uniqueEmail() });
    for (let i = 1; i <= 101; i++) await expectStatus(A.put(id as string, { name: `n${i}` }), 200);
    const first = await expectStatus(app().http.get(withToken(`customers/${id as string}/history`)), 200);
    expect(first.body.data).toHaveLength(100);
    expect(totalOf(first)).toBe(102);
    const rest = await expectStatus(app().http.get(withToken(`customers/${id as string}/history?offset=100`)), 200);
    expect(rest.body.data.map((e: Rec) => e.revision)).toEqual([100, 101]);
    expect(rest.body.data[1].changes).toEqual({ name: { from: 'n100', to: 'n101' } });
  });
});
