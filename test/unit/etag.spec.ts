import { Refusal } from '../../src/errors';
import { parseIfMatch } from '../../src/http/etag';

describe('If-Match', () => {
  it('is no precondition when absent', () => {
    expect(parseIfMatch(undefined)).toBeUndefined();
  });

  it('takes * as "the record exists"', () => {
    expect(parseIfMatch('*')).toBe('*');
  });

  it('takes one or several strong tags as revisions', () => {
    expect(parseIfMatch('"3"')).toEqual([3]);
    expect(parseIfMatch('"1", "12" ,"0"')).toEqual([1, 12, 0]);
  });

  it('lets weak tags and tags that are not revisions match nothing (strong comparison)', () => {
    expect(parseIfMatch('W/"3"')).toEqual([]);
    expect(parseIfMatch('"abc", W/"2", "4"')).toEqual([4]);
  });

  it.each(['3', '', '"3', '"3",', 'W/3', '"a b"', '*, "3"'])('refuses %j naming If-Match', (header) => {
    let error: unknown;
    try {
      parseIfMatch(header);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Refusal);
    expect(error).toMatchObject({ reason: 'invalid', details: [{ field: 'If-Match', message: expect.any(String) }] });
  });
});
