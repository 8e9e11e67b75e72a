/**
 * Parameters and fields that take one value: a list or object in the query (`email[]=x`,
 * `company[a]=b`), a repeated parameter, and text that is not well-formed (a lone surrogate), over
 * HTTP. Each is a 400 naming what was wrong, never a list of the whole account.
 */
import type { Response } from 'supertest';
import { expectError, expectStatus, Rec, totalOf, uniqueEmail } from '../support/http-assertions';
import { freshApp, JSON_CT, withToken } from '../support/test-app';

const app = freshApp();

/** The faults of a 400, by field. */
const faultsOf = (res: Response): Rec[] => res.body.error.details;

describe('a list, a read or a history given a list or object where one value is expected', () => {
  let id: string;
  let email: string;

  beforeAll(async () => {
    email = uniqueEmail();
    const created = await expectStatus(app().http.post(withToken('customers')).send({ email, company: 'Acme' }), 201);
    id = created.body.data.Customer.id;
    await expectStatus(app().http.post(withToken('customers')).send({ email: uniqueEmail(), company: 'Other' }), 201);
  });

  it.each([
    ['customers?email[]=EMAIL', 'email'],
    ['customers?email%5B%5D=EMAIL', 'email'],
    ['customers?company[a]=Acme', 'company'],
    ['customers?mobile[]=09121234567', 'mobile'],
    ['customers?limit[]=5', 'limit'],
    ['customers?offset[x]=1', 'offset'],
    ['customers?page[]=2', 'page'],
    ['profiles?site[]=example', 'site'],
    ['profiles?slug[a][b]=x', 'slug'],
    ['customers/ID?as_of[]=1', 'as_of'],
    ['customers/ID/history?limit[]=1', 'limit'],
  ])('%s answers 400 naming %s', async (path, field) => {
    const res = await app().http.get(withToken(path.replace('EMAIL', encodeURIComponent(email)).replace('ID', id)));
    expectError(res, 400, 'VALIDATION_FAILED', [field]);
    expect(faultsOf(res)).toEqual([{ field, message: `${field} takes a single value, not a list or an object (${field}[…])` }]);
  });

  it('names each such parameter once, beside the other faults', async () => {
    const res = await app().http.get(withToken('customers?email[]=a&email[]=b&email[x]=c&company[]=d&limit=0'));
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(faultsOf(res).map((f) => f.field)).toEqual(['email', 'company', 'limit']);
  });

  it('refuses a parameter given twice, naming it', async () => {
    const res = await app().http.get(withToken(`customers?email=${encodeURIComponent(email)}&email=x%40example.com`));
    expectError(res, 400, 'VALIDATION_FAILED', ['email']);
    expect(faultsOf(res)).toEqual([{ field: 'email', message: 'email must be given once' }]);
  });

  it('still ignores a parameter the list does not know, brackets or not', async () => {
    const res = await expectStatus(app().http.get(withToken(`customers?email=${encodeURIComponent(email)}&colour[]=blue&site[]=x`)), 200);
    expect(totalOf(res)).toBe(1);
  });
});

describe('text holding a lone surrogate', () => {
  const LONE = /must be well-formed Unicode text, but it holds a lone surrogate/;

  /** A JSON body as sent on the wire: `\ud83d` escaped, as JSON.stringify would never write it. */
  const post = (path: string, raw: string) => app().http.post(withToken(path)).set('Content-Type', JSON_CT).send(raw);

  it.each([
    ['customers', 'name', '{"name":"x\\ud83dy","email":"lone@example.com"}'],
    ['customers', 'company', '{"company":"\\udc00","email":"lone@example.com"}'],
    ['customers', 'email', '{"email":"a\\ud800@example.com"}'],
    ['profiles', 'description', '{"description":"ok \\ud83d"}'],
  ])('POST /v1/%s refuses it in %s, saying so rather than speaking of its length', async (resource, field, raw) => {
    const res = await post(resource, raw);
    expectError(res, 400, 'VALIDATION_FAILED', [field]);
    const fault = faultsOf(res).find((f) => f.field === field)!;
    expect(fault.message).toMatch(LONE);
    expect(fault.message).not.toMatch(/at most|characters/);
  });

  it('PUT refuses it too and changes nothing', async () => {
    const created = await expectStatus(app().http.post(withToken('customers')).send({ name: 'Kept', email: uniqueEmail() }), 201);
    const id = created.body.data.Customer.id;
    const res = await app()
      .http.put(withToken(`customers/${id}`))
      .set('Content-Type', JSON_CT)
      .send('{"name":"x\\ud83dy"}');
    expectError(res, 400, 'VALIDATION_FAILED', ['name']);
    expect(faultsOf(res)[0].message).toMatch(LONE);
    const read = await expectStatus(app().http.get(withToken(`customers/${id}`)), 200);
    expect(read.body.data[0].Customer.name).toBe('Kept');
  });

  it('takes a well-formed pair, an astral character', async () => {
    const res = await expectStatus(post('customers', '{"name":"x\\ud83d\\ude00y","email":"pair@example.com"}'), 201);
    expect(res.body.data.Customer.name).toBe('x😀y');
  });
});
