import { inAccountTurn, TURN_BUDGET_MS } from '../../src/http/account-turns';

/** Counts the event loop's turns: a callback of the check phase, set again each turn. */
function loopTurns(): { now(): number; stop(): void } {
  let turn = 0;
  let timer = setImmediate(function tick() {
    turn++;
    timer = setImmediate(tick);
  });
  return { now: () => turn, stop: () => clearImmediate(timer) };
}

/** Holds the event loop for `ms`, as a synchronous SQLite list does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** A turn of the loop with no list in it, so that each test starts with the turn's budget whole. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('lists in turns', () => {
  beforeEach(nextTurn);

  it("starts cheap lists where they are asked for, one of an account's at a time, within the turn", async () => {
    const turns = loopTurns();
    const started: [string, number][] = [];
    // As a poll of the sockets hands over several requests at once: synchronous lists, all asked for in one go.
    const list = (account: string, name: string) => inAccountTurn(account, async () => void started.push([name, turns.now()]));
    const lists = [list('a', 'a1'), list('a', 'a2'), list('a', 'a3'), list('c', 'c1'), list('c', 'c2')];
    try {
      expect(started.map(([name]) => name)).toEqual(['a1', 'c1']); // at once, the others once theirs end
      await Promise.all(lists);
    } finally {
      turns.stop();
    }
    expect(started.map(([name]) => name)).toEqual(['a1', 'c1', 'a2', 'c2', 'a3']);
    expect(new Set(started.map(([, turn]) => turn)).size).toBe(1); // none waited for a turn
  });

  it("past the turn's budget, starts one list per turn, however many came in at once, the accounts in rotation", async () => {
    const turns = loopTurns();
    const started: [string, number][] = [];
    const costly = (account: string, name: string) =>
      inAccountTurn(account, async () => {
        started.push([name, turns.now()]);
        busy(2 * TURN_BUDGET_MS);
      });
    const lists = [costly('a', 'a1'), costly('a', 'a2'), costly('a', 'a3'), costly('c', 'c1'), costly('c', 'c2')];
    try {
      expect(started.map(([name]) => name)).toEqual(['a1']); // the turn's budget spent by the first
      await Promise.all(lists);
    } finally {
      turns.stop();
    }
    // The others in rotation from the first account that waited: a's line was there before c's.
    expect(started.map(([name]) => name)).toEqual(['a1', 'a2', 'c1', 'a3', 'c2']);
    const at = started.map(([, turn]) => turn);
    expect(new Set(at).size).toBe(at.length); // each in a turn of its own
  });

  it("runs one list of an account at a time, other accounts' lists going on meanwhile", async () => {
    const seen: string[] = [];
    let finishFirst!: () => void;
    const first = inAccountTurn('a', async () => {
      seen.push('a1 start');
      await new Promise<void>((resolve) => (finishFirst = resolve));
      seen.push('a1 end');
    });
    const second = inAccountTurn('a', async () => void seen.push('a2'));
    await inAccountTurn('b', async () => void seen.push('b'));
    expect(seen).toEqual(['a1 start', 'b']);
    finishFirst();
    await Promise.all([first, second]);
    expect(seen).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
  });

  it('lets the next one in when a list fails, or throws before its first await', async () => {
    await expect(inAccountTurn('c', async () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    const throwing = (() => {
      throw new Error('bad statement');
    }) as () => Promise<never>;
    await expect(inAccountTurn('c', throwing)).rejects.toThrow('bad statement');
    await expect(inAccountTurn('c', async () => 'next')).resolves.toBe('next');
  });
});
