/**
 * Lists take turns. A list runs on the event loop (SQLite answers synchronously) for up to some tens
 * of milliseconds at the bounds (a common substring, an offset of 10,000). Run as they arrive, every
 * list whose request came in on one poll of the sockets would run back to back, and another
 * account's read would wait for all of them. So lists have TURN_BUDGET_MS of each turn of the event
 * loop: while the lists started in this turn have taken less, a list starts where it is asked for;
 * past it, the others wait for later turns, one at least per turn, accounts in rotation, and an
 * account's next list only once its last one is done. Another account's read waits for at most
 * TURN_BUDGET_MS of lists and one list more; a costly list has a turn to itself.
 *
 * Cheap lists are not all deferred: a request held from one turn of the loop to a later one cost a
 * list a tenth of its CPU, most of it in garbage collection (docs/benchmarks.md).
 */
type Start = () => void;

/** The event loop time lists may take in one turn. */
export const TURN_BUDGET_MS = 1;

/** The accounts with lists waiting, in the order of their next turn (a Map keeps insertion order). */
const waiting = new Map<string, Start[]>();
/** The accounts with a list running now. */
const running = new Set<string>();
/** Event loop time the lists started since the last check phase have taken. */
let spentMs = 0;
let turnScheduled = false;

export function inAccountTurn<T>(accountId: string, work: () => Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const start = () => {
      running.add(accountId);
      const started = performance.now();
      new Promise<T>((settle) => settle(work())).then(resolve, reject).finally(() => {
        running.delete(accountId);
        startWhileBudgetLasts();
      });
      spentMs += performance.now() - started;
    };
    const line = waiting.get(accountId);
    if (line) line.push(start);
    else waiting.set(accountId, [start]);
    startWhileBudgetLasts();
  });
}

/** Starts waiting lists, accounts in rotation, while the turn's budget lasts; the others wait for the check phase. */
function startWhileBudgetLasts(): void {
  while (spentMs < TURN_BUDGET_MS && startNext());
  // The check phase gives the next turn its budget, and starts what still waits.
  if (!turnScheduled && (spentMs > 0 || anyReady())) {
    turnScheduled = true;
    // setImmediate: after the poll of the sockets, so the requests that came in meanwhile are taken first.
    setImmediate(takeTurn);
  }
}

/** Whether an account waiting has no list running (one that has waits for it to end, not for a turn). */
function anyReady(): boolean {
  for (const account of waiting.keys()) if (!running.has(account)) return true;
  return false;
}

/** Starts the next account's next list, unless every account waiting has one running. */
function startNext(): boolean {
  for (const [account, line] of waiting) {
    if (running.has(account)) continue;
    const start = line.shift()!;
    waiting.delete(account);
    if (line.length > 0) waiting.set(account, line); // to the back of the rotation
    start();
    return true;
  }
  return false;
}

function takeTurn(): void {
  turnScheduled = false;
  spentMs = 0;
  // One list at least, however long the last turn's took.
  startNext();
  startWhileBudgetLasts();
}
