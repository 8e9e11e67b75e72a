import { Refusal } from '../../src/errors';
import { listCursor, MAX_LIST_OFFSET, parseListQuery } from '../../src/http/list-query';

const parse = (q: Record<string, unknown>) => parseListQuery(q, ['email', 'company']);

function faults(q: Record<string, unknown>): string[] {
  try {
    parse(q);
  } catch (error) {
    return ((error as Refusal).details ?? []).map((d) => d.field);
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

describe('list query: deep pages (record lists)', () => {
  const records = (q: Record<string, unknown>) => parseListQuery(q, ['email'], 10, { cursor: true });
  const refusal = (q: Record<string, unknown>) => {
    try {
      records(q);
    } catch (error) {
      return (error as Refusal).details;
    }
    throw new Error('expected a refusal');
  };

  it('reads the cursor the service gives (listCursor) into after', () => {
    expect(records({ after: listCursor(123456), limit: '5' })).toEqual({ limit: 5, offset: 0, filters: {}, after: 123456 });
  });

  it(`allows offsets up to ${MAX_LIST_OFFSET}, and refuses past it naming offset or page and the way on`, () => {
    expect(records({ offset: String(MAX_LIST_OFFSET) }).offset).toBe(MAX_LIST_OFFSET);
    const message = `a list skips at most ${MAX_LIST_OFFSET} records (offset, or (page-1)*limit); page further with after, the X-Next-Cursor of the page before`;
    expect(refusal({ offset: String(MAX_LIST_OFFSET + 1) })).toEqual([{ field: 'offset', message }]);
    expect(refusal({ page: '102', limit: '100' })).toEqual([{ field: 'page', message }]);
  });

  it.each([['nonsense'], [listCursor(5).slice(0, -1)], [Buffer.from('seq:05').toString('base64url')], [Buffer.from('seq:-1').toString('base64url')]])(
    'refuses after=%j naming it',
    (after) => {
      expect(refusal({ after })).toEqual([{ field: 'after', message: 'after must be an X-Next-Cursor value the service gave' }]);
    },
  );

  it('refuses after with offset or page', () => {
    expect(refusal({ after: listCursor(9), page: '2' })).toEqual([{ field: 'after', message: 'send either after or offset/page, not both' }]);
  });

  it('leaves histories (no cursor) their deep offsets, and ignores after there', () => {
    expect(parseListQuery({ offset: '999900', after: listCursor(1) }, [], 100)).toEqual({ limit: 100, offset: 999900, filters: {} });
  });
});
