import { uid, uniqueEmail } from '../support/http-assertions';
import { RUN_SUFFIX } from '../support/stores';
import { startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

/**
 * Writes sent together to one record (issue 36, item 4). Each race is run for many rounds: with
 * WORKERS=2 (the "WORKERS=2" project) the requests of a round are spread over both workers.
 */
describe('writes racing on one record', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('answers each PUT sent with a DELETE and an erasure its own outcome: 200 if its update was applied, else 404', async () => {
    const mismatches: string[] = [];
    for (let round = 0; round < 30; round++) {
      const created = await t.http.post(withToken('customers')).send({ name: 'Before', email: uniqueEmail() }).expect(201);
      const id = created.body.data.Customer.id as string;
      const requestIds = [1, 2, 3].map((i) => `race-${round}-${i}${RUN_SUFFIX}`);
      const [answers] = await Promise.all([
        Promise.all(
          requestIds.map((rid, i) =>
            t.http
              .put(withToken(`customers/${id}`))
              .set('X-Request-Id', rid)
              .send({ name: `After ${i}` }),
          ),
        ),
        t.http.delete(withToken(`customers/${id}`)),
        t.http.post(withToken(`customers/${id}/erase`)).expect(200),
      ]);
      const applied = new Set((await t.events.readStream(`customer-${id}`)).filter((e) => e.type === 'CustomerUpdated').map((e) => e.metadata.correlationId));
      answers.forEach((res, i) => {
        const expected = applied.has(requestIds[i]) ? 200 : 404;
        // A PUT applied shows the record as it left it, not as a later write did.
        const shown = res.status === 200 ? ` showing "${res.body.data.Customer.name}"` : '';
        const answered = `${res.status}${shown}`;
        const own = expected === 200 ? `200 showing "After ${i}"` : '404';
        if (answered !== own) mismatches.push(`round ${round}, ${requestIds[i]}: ${answered}, expected ${own}`);
      });
    }
    expect(mismatches).toEqual([]);
  });

  it('frees every slug of a profile erased while a PUT changes its slug: another account takes each at once', async () => {
    const held: string[] = [];
    for (let round = 0; round < 60; round++) {
      const [before, after] = [uid('slugBefore'), uid('slugAfter')];
      const created = await t.http.post(withToken('profiles')).send({ name: 'Shop', slug: before }).expect(201);
      const id = created.body.data.Profile.id as string;
      await Promise.all([t.http.put(withToken(`profiles/${id}`)).send({ slug: after }), t.http.post(withToken(`profiles/${id}/erase`)).expect(200)]);
      for (const slug of [before, after]) {
        const taken = await t.http.post(withToken('profiles', TOKENS.b)).send({ name: 'Other', slug });
        if (taken.status !== 201) held.push(`round ${round}: ${slug} answered ${taken.status}`);
      }
    }
    expect(held).toEqual([]);
  });
});
