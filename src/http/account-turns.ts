/**
 * Lists of one account run one at a time, the next one let in on a later turn of the event loop.
 * A list runs on the event loop (SQLite answers synchronously) for up to some tens of
 * milliseconds at the bounds (a common substring, an offset of 10,000): an account sending many at
 * once would queue every other account's requests behind all of its own. In turns, another
 * account's request waits at most for the one list running, and the account's own lists for each
 * other, as they would on any one connection.
 */
const lastInLine = new Map<string, Promise<void>>();

export async function inAccountTurn<T>(accountId: string, work: () => Promise<T>): Promise<T> {
  const before = lastInLine.get(accountId);
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  lastInLine.set(accountId, mine);
  if (before) {
    await before;
    // Resumed from the one before's end: first let the event loop take the requests waiting on it.
    await new Promise((resolve) => setImmediate(resolve));
  }
  try {
    return await work();
  } finally {
    done();
    if (lastInLine.get(accountId) === mine) lastInLine.delete(accountId);
  }
}
