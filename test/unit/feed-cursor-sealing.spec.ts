import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { FeedCursors } from '../../src/feed/feed-cursors';

describe('FeedCursors: positions sealed for one account', () => {
  const cursors = new FeedCursors(randomBytes(32));
  const position = fc.record({ commit: fc.bigInt(-1n, 2n ** 62n), prepare: fc.bigInt(-1n, 2n ** 62n) });
  const account = fc.string({ minLength: 1, maxLength: 40 });

  it('opens what it sealed, for the same account, and gives the same cursor for the same position', () => {
    fc.assert(
      fc.property(account, position, (accountId, p) => {
        const cursor = cursors.seal(accountId, p);
        expect(cursor).toMatch(/^[A-Za-z0-9_-]{32}$/);
        expect(cursors.seal(accountId, p)).toBe(cursor);
        expect(cursors.open(accountId, cursor)).toEqual(p);
      }),
    );
  });

  it('opens nothing for another account, under another secret, or once altered', () => {
    const other = new FeedCursors(randomBytes(32));
    fc.assert(
      fc.property(account, account, position, fc.nat(31), (a, b, p, at) => {
        fc.pre(a !== b);
        const cursor = cursors.seal(a, p);
        expect(cursors.open(b, cursor)).toBeUndefined();
        expect(other.open(a, cursor)).toBeUndefined();
        const flipped = cursor.slice(0, at) + (cursor[at] === 'A' ? 'B' : 'A') + cursor.slice(at + 1);
        expect(cursors.open(a, flipped)).toBeUndefined();
      }),
    );
  });

  it('tells nothing of the position in the clear: the cursors of neighbouring positions share no pattern', () => {
    const sealed = Array.from({ length: 64 }, (_, i) => cursors.seal('acct', { commit: BigInt(i), prepare: BigInt(i) }));
    expect(new Set(sealed).size).toBe(64);
    // Plain counters would share their first bytes; sealed ones share a prefix only by chance.
    const sharedPrefix = sealed.filter((c) => c.slice(0, 4) === sealed[0].slice(0, 4)).length;
    expect(sharedPrefix).toBeLessThan(3);
  });

  it.each(['', 'short', `${'A'.repeat(31)}=`, `${'A'.repeat(32)}`, `${'a'.repeat(40)}`, 'Zm9vYmFy/+Zm9vYmFyZm9vYmFyZm9vYmFy'])('refuses %p', (cursor) => {
    expect(cursors.open('acct', cursor)).toBeUndefined();
  });
});
