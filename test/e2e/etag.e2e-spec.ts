import { CUSTOMERS, expectError, expectExactError, expectStatus, PROFILES, resourceClient } from '../support/http-assertions';
import { freshApp, TOKENS, withToken } from '../support/test-app';

const app = freshApp();

describe.each([PROFILES, CUSTOMERS])('ETag and If-Match on $path', (spec) => {
  const A = resourceClient(app, spec);
  const item = (id: string, token: string = TOKENS.a) => withToken(`${spec.path}/${id}`, token);
  const put = (id: string, body: object, ifMatch?: string, token?: string) => {
    const req = app().http.put(item(id, token));
    return (ifMatch === undefined ? req : req.set('If-Match', ifMatch)).send(body);
  };
  const del = (id: string, ifMatch?: string, token?: string) => {
    const req = app().http.delete(item(id, token));
    return ifMatch === undefined ? req : req.set('If-Match', ifMatch);
  };
  const eventsOf = async (id: string) => (await app().events.readStream(`${spec.noun}-${id}`)).length;
  const create = async () => {
    const res = await expectStatus(A.post(spec.minimal()), 201);
    return { id: res.body.data[spec.key].id as string, etag: res.headers.etag };
  };

  it('carries the stream revision on create, read and update; a no-op update keeps it', async () => {
    const { id, etag } = await create();
    expect(etag).toBe('"0"');
    expect((await expectStatus(A.get(id), 200)).headers.etag).toBe('"0"');
    expect((await expectStatus(put(id, { name: 'x' }), 200)).headers.etag).toBe('"1"');
    expect((await expectStatus(A.get(id), 200)).headers.etag).toBe('"1"');
    expect((await expectStatus(put(id, { name: 'x' }), 200)).headers.etag).toBe('"1"');
    expect((await expectStatus(put(id, { name: 'y' }), 200)).headers.etag).toBe('"2"');
  });

  it('updates when If-Match names the current revision, or is *', async () => {
    const { id } = await create();
    const first = await expectStatus(put(id, { name: 'a' }, '"0"'), 200);
    expect(first.headers.etag).toBe('"1"');
    expect((await expectStatus(put(id, { name: 'b' }, '"7", "1"'), 200)).headers.etag).toBe('"2"');
    expect((await expectStatus(put(id, { name: 'c' }, '*'), 200)).headers.etag).toBe('"3"');
    expect((await A.read(id)).name).toBe('c');
  });

  it('answers 412 naming the current revision when the record has moved on, and changes nothing', async () => {
    const { id } = await create();
    await expectStatus(put(id, { name: 'moved' }), 200);
    for (const stale of ['"0"', 'W/"1"', '"abc"']) {
      const res = await put(id, { name: 'lost' }, stale);
      expectExactError(res, 412, 'PRECONDITION_FAILED', { details: false });
      expect(res.body.error.message).toContain('"1"');
    }
    expectExactError(await del(id, '"0"'), 412, 'PRECONDITION_FAILED', { details: false });
    expect((await A.read(id)).name).toBe('moved');
    expect(await eventsOf(id)).toBe(2);
  });

  it('deletes when If-Match names the current revision', async () => {
    const { id } = await create();
    await expectStatus(del(id, '"0"'), 200);
    await expectStatus(A.get(id), 404);
  });

  it("answers 404, not 412, for a deleted record and for another account's record", async () => {
    const { id } = await create();
    await expectStatus(del(id), 200);
    expectError(await put(id, { name: 'x' }, '"1"'), 404, 'NOT_FOUND');
    expectError(await put(id, { name: 'x' }, '*'), 404, 'NOT_FOUND');
    expectError(await del(id, '"0"'), 404, 'NOT_FOUND');
    const live = await create();
    expectError(await put(live.id, { name: 'x' }, '"0"', TOKENS.b), 404, 'NOT_FOUND');
    expectError(await del(live.id, '*', TOKENS.b), 404, 'NOT_FOUND');
  });

  it.each(['0', '', '"0', 'W/0', '"0",'])('refuses a malformed If-Match %j naming the header, changing nothing', async (header) => {
    const { id } = await create();
    expectError(await put(id, { name: 'x' }, header), 400, 'VALIDATION_FAILED', ['If-Match']);
    expectError(await del(id, header), 400, 'VALIDATION_FAILED', ['If-Match']);
    expect(await eventsOf(id)).toBe(1);
  });

  it('lets exactly one of two concurrent updates with the same If-Match through', async () => {
    const { id } = await create();
    const results = await Promise.all([put(id, { name: 'one' }, '"0"'), put(id, { name: 'two' }, '"0"')]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await A.read(id)).name).toBe(winner.body.data[spec.key].name);
    expect(await eventsOf(id)).toBe(2);
  });

  it('loses no update among concurrent writers without If-Match', async () => {
    const { id } = await create();
    const names = Array.from({ length: 6 }, (_, i) => `w${i}`);
    const results = await Promise.all(names.map((name) => put(id, { name })));
    expect(results.map((r) => r.status)).toEqual(names.map(() => 200));
    // Each update changed the name, so each appended one event.
    expect(await eventsOf(id)).toBe(1 + names.length);
    expect((await expectStatus(A.get(id), 200)).headers.etag).toBe(`"${names.length}"`);
  });
});
