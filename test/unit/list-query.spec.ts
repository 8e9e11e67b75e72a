import { ApiError } from '../../src/errors';
import { parseListQuery } from '../../src/http/list-query';

const parse = (q: Record<string, unknown>) => parseListQuery(q, ['email', 'company']);

function faults(q: Record<string, unknown>): string[] {
  try {
    parse(q);
  } catch (error) {
    return ((error as ApiError).details ?? []).map((d) => d.field);
  }
  throw new Error('expected a refusal');
}

describe('list query', () => {
  it('defaults to the 10 newest', () => {
    expect(parse({})).toEqual({ limit: 10, offset: 0, filters: {} });
  });

  it('turns page N into offset (N-1)*limit', () => {
    expect(parse({ page: '3', limit: '20' })).toMatchObject({ offset: 40, limit: 20 });
  });

  it('keeps known non-empty filters and ignores unknown parameters', () => {
    expect(parse({ email: 'a@b.c', company: '', foo: 'bar', 'foo[]': 'x', '[email]': 'y', access_token: 't' }).filters).toEqual({ email: 'a@b.c' });
  });

  it.each([
    [{ limit: '0' }, ['limit']],
    [{ limit: '101' }, ['limit']],
    [{ limit: '1.5' }, ['limit']],
    [{ offset: '-1' }, ['offset']],
    [{ page: '0' }, ['page']],
    [{ offset: '0', page: '1' }, ['page']],
    [{ email: ['a', 'b'] }, ['email']],
    [{ limit: 'x', offset: 'y' }, ['limit', 'offset']],
    // The simple query parser keeps `email[]=x` and `company[a]=b` as names of their own.
    [{ 'email[]': 'x' }, ['email']],
    [{ 'company[a]': 'b', 'company[c]': 'd' }, ['company']],
    [{ 'limit[]': '5', 'page[x]': '1' }, ['limit', 'page']],
  ])('refuses %j naming %j', (q, fields) => {
    expect(faults(q)).toEqual(fields);
  });
});
