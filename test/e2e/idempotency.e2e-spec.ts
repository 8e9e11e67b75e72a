import request from 'supertest';
import { startChildService } from '../support/child-service';
import { CUSTOMERS, expectError, expectStatus, PROFILES, resourceClient, totalOf, uid, uniqueEmail } from '../support/http-assertions';
import { freshApp, makeDataDir, TOKENS, withToken } from '../support/test-app';

const app = freshApp();
const head = () => app().events.headPosition();
/** What a replay must repeat exactly. */
const answer = (res: request.Response) => ({ status: res.status, body: res.body, etag: res.headers.etag });

describe.each([PROFILES, CUSTOMERS])('Idempotency-Key on POST /v1/$path', (spec) => {
  const A = resourceClient(app, spec);
  const post = (key: string, body: object, token: string = TOKENS.a, path: string = spec.path) =>
    app().http.post(withToken(path, token)).set('Idempotency-Key', key).send(body);
  /** A body that makes a distinct record; for profiles also a slug, which only one record may hold. */
  const body = () => ({ ...spec.minimal(), name: uid('idem'), ...(spec === PROFILES ? { slug: uid('slug') } : { tel: 42 }) });
  const countNamed = async (name: string) => {
    const res = await expectStatus(A.list({ limit: 100 }), 200);
    return res.body.data.filter((w: Record<string, { name: string }>) => w[spec.key].name === name).length;
  };

  it('answers a retry with the same body exactly as the first time, appending nothing', async () => {
    const key = `key-${uid()}`;
    const sent = body();
    const first = await expectStatus(post(key, sent), 201);
    expect(first.headers.etag).toBe('"0"');
    const before = await head();
    // The same body with its members in another order is the same request.
    const retry = await post(key, Object.fromEntries(Object.entries(sent).reverse()));
    expect(answer(retry)).toEqual(answer(first));
    expect(await head()).toEqual(before);
    expect(await countNamed(sent.name)).toBe(1);
  });

  it('replays the first response even after the record changed', async () => {
    const key = `key-${uid()}`;
    const sent = body();
    const first = await expectStatus(post(key, sent), 201);
    await expectStatus(A.put(first.body.data[spec.key].id, { name: 'renamed' }), 200);
    expect(answer(await post(key, sent))).toEqual(answer(first));
  });

  it('refuses the same key with another body: 409 naming the header, nothing appended', async () => {
    const key = `key-${uid()}`;
    await expectStatus(post(key, body()), 201);
    const before = await head();
    const res = await post(key, body());
    expectError(res, 409, 'CONFLICT', ['Idempotency-Key']);
    expect(await head()).toEqual(before);
  });

  it('refuses the same key and body on the other collection: 409 naming the collection it was used on', async () => {
    const key = `key-${uid()}`;
    const sent = { email: uniqueEmail() };
    await expectStatus(post(key, sent), 201);
    const elsewhere = await post(key, sent, TOKENS.a, spec === PROFILES ? 'customers' : 'profiles');
    expectError(elsewhere, 409, 'CONFLICT', ['Idempotency-Key']);
    expect(elsewhere.body.error.message).toBe(
      `This Idempotency-Key was used to create in /v1/${spec === PROFILES ? 'profiles' : 'customers'}; use a new key for a new request.`,
    );
  });

  it('scopes keys per account: the same key in another account is a new request', async () => {
    const key = `key-${uid()}`;
    const sent = spec.minimal();
    const mine = await expectStatus(post(key, sent), 201);
    const theirs = await expectStatus(post(key, sent, TOKENS.b), 201);
    expect(theirs.body.data[spec.key].id).not.toBe(mine.body.data[spec.key].id);
    // Account A's second token is the same account: the same key replays.
    expect(answer(await post(key, sent, TOKENS.a2))).toEqual(answer(mine));
  });

  it('creates one record from concurrent first attempts with one key', async () => {
    const key = `key-${uid()}`;
    const sent = body();
    const results = await Promise.all(Array.from({ length: 8 }, () => post(key, sent)));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 201));
    for (const res of results) expect(answer(res)).toEqual(answer(results[0]));
    expect(await countNamed(sent.name)).toBe(1);
  });

  it.each(['', ' ', 'has space', 'x'.repeat(256), 'tab\tkey', 'ünïcode'])('refuses the key %j naming the header', async (key) => {
    const before = await head();
    expectError(await post(key, body()), 400, 'VALIDATION_FAILED', ['Idempotency-Key']);
    expect(await head()).toEqual(before);
  });

  it('works without a key as before: each POST creates', async () => {
    const sent = body();
    if (spec === PROFILES) delete (sent as { slug?: string }).slug;
    await expectStatus(A.post(sent), 201);
    await expectStatus(A.post(sent), 201);
    expect(await countNamed(sent.name)).toBe(2);
  });
});

describe('an attempt that failed after claiming its key', () => {
  const A = resourceClient(app, PROFILES);
  const B = resourceClient(app, PROFILES, TOKENS.b);

  it('is run again by the retry, which then creates the record once', async () => {
    const slug = uid('taken');
    const holder = await B.create({ slug });
    const key = `key-${uid()}`;
    const post = () => app().http.post(withToken('profiles')).set('Idempotency-Key', key).send({ name: 'late', slug });
    // The first attempt claims the key, then fails on the slug: no response is stored.
    expectError(await post(), 409, 'CONFLICT', ['slug']);
    await expectStatus(B.del(holder.id as string), 200);
    const created = await expectStatus(post(), 201);
    expect(answer(await post())).toEqual(answer(created));
    const list = await expectStatus(A.list({ slug }), 200);
    expect(totalOf(list)).toBe(1);
  });
});

describe('Idempotency-Key across a restart', () => {
  it('answers the retry after a crash and restart with the first response', async () => {
    const dataDir = makeDataDir();
    const key = `key-${uid()}`;
    const sent = { email: uniqueEmail(), name: 'Before crash' };
    const post = (url: string) => request(url).post(withToken('customers')).set('Idempotency-Key', key).send(sent);

    const first = await startChildService(dataDir);
    const created = await post(first.url);
    expect(created.status).toBe(201);
    first.crash();
    await first.exited;

    const second = await startChildService(dataDir);
    try {
      const retry = await post(second.url);
      expect(answer(retry)).toEqual(answer(created));
      const list = await request(second.url).get(withToken(`customers?email=${encodeURIComponent(sent.email)}`));
      expect(list.headers['x-total-count']).toBe('1');
    } finally {
      second.process.kill('SIGTERM');
      await second.exited;
    }
  });
});
