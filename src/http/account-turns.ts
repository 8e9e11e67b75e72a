/**
 * Lists take turns: at most one starts per turn of the event loop, the accounts waiting served in
 * rotation, and an account's next list only once its last one is done. A list runs on the event
 * loop (SQLite answers synchronously) for up to some tens of milliseconds at the bounds (a common
 * substring, an offset of 10,000). Run as they arrive, every list whose request came in on one poll
 * of the sockets would run back to back, and another account's read would wait for all of them; in
 * turns, it waits for one list at most, and each listing account for one list of each other's.
 */
type Start = () => void;

/** The accounts with lists waiting, in the order of their next turn (a Map keeps insertion order). */
const waiting = new Map<string, Start[]>();
/** The accounts with a list running now. */
const running = new Set<string>();
let turnScheduled = false;

export function inAccountTurn<T>(accountId: string, work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const start = () => {
      running.add(accountId);
      new Promise<T>((settle) => settle(work())).then(resolve, reject).finally(() => {
        running.delete(accountId);
        scheduleTurn();
      });
    };
    const line = waiting.get(accountId);
    if (line) line.push(start);
    else waiting.set(accountId, [start]);
    scheduleTurn();
  });
}

function scheduleTurn(): void {
  if (turnScheduled) return;
  for (const account of waiting.keys()) {
    if (running.has(account)) continue;
    turnScheduled = true;
    // setImmediate: after the poll of the sockets, so the requests that came in meanwhile are taken first.
    setImmediate(takeTurn);
    return;
  }
}

function takeTurn(): void {
  turnScheduled = false;
  for (const [account, line] of waiting) {
    if (running.has(account)) continue;
    const start = line.shift()!;
    waiting.delete(account);
    if (line.length > 0) waiting.set(account, line); // to the back of the rotation
    start();
    break;
  }
  scheduleTurn();
}
