import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { substringQuery, substringTokens } from '../../src/read-store/substrings';

/** The tokens as first written: every distinct piece of 1 to 3 code points, its UTF-8 in hex, by field. */
function reference(accountId: string, values: string[]): string {
  const account = `k${createHash('sha256').update(accountId).digest('hex').slice(0, 8)}`;
  const pieces = (value: string) => {
    const chars = [...value];
    const found = new Set<string>();
    for (const n of [1, 2, 3]) for (let i = 0; i + n <= chars.length; i++) found.add(chars.slice(i, i + n).join(''));
    return found;
  };
  return values
    .flatMap((value, place) => [...pieces(value)].map((piece) => `${account}${String.fromCharCode(0x67 + place)}${Buffer.from(piece, 'utf8').toString('hex')}`))
    .join(' ');
}

describe('substring tokens', () => {
  it('are the distinct 1- to 3-code-point pieces of each value, in order, as first defined', () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.string({ unit: 'grapheme' }),
      // Lone surrogates encode as U+FFFD does: told apart by their text, not their hex.
      fc.constantFrom('', 'aaaa', 'company 12', '\uD800\uFFFDa\uDC00\uD801', 'ab\uD83D', '\uDE00x\uD83D\uDE00'),
    );
    fc.assert(
      fc.property(fc.string(), fc.array(text, { maxLength: 4 }), (accountId, values) => {
        expect(substringTokens(accountId, values)).toBe(reference(accountId, values));
      }),
      { numRuns: 2000 },
    );
  });

  it('are the same for long values, and for any ASCII (control characters, NUL)', () => {
    const ascii = fc.oneof(fc.string({ unit: 'binary-ascii', maxLength: 3000 }), fc.string({ maxLength: 50 }));
    fc.assert(
      fc.property(fc.array(ascii, { maxLength: 3 }), (values) => {
        expect(substringTokens('acc', values)).toBe(reference('acc', values));
      }),
      { numRuns: 300 },
    );
    const long = 'x'.repeat(5000) + Array.from({ length: 3000 }, (_, i) => String.fromCharCode(i % 128)).join('');
    expect(substringTokens('acc', [long, 'ab'])).toBe(reference('acc', [long, 'ab']));
  });

  it("keep each account's apart, many accounts in turn", () => {
    const tokens = Array.from({ length: 3000 }, (_, i) => substringTokens(`account-${i % 1500}`, ['Acme']));
    tokens.forEach((t, i) => expect(t).toBe(reference(`account-${i % 1500}`, ['Acme'])));
    expect(new Set(tokens).size).toBe(1500);
  });

  it('hold every token of a query for a value that contains it', () => {
    const tokens = new Set(substringTokens('acc', ['', 'company 123 ltd']).split(' '));
    for (const query of ['c', 'co', 'com', 'pany 1', '123 l']) {
      for (const token of substringQuery('acc', 1, query).split(' ')) expect(tokens.has(token)).toBe(true);
    }
  });
});
