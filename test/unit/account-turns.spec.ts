import { inAccountTurn } from '../../src/http/account-turns';

/** Counts the event loop's turns: a callback of the check phase, set again each turn. */
function loopTurns(): { now(): number; stop(): void } {
  let turn = 0;
  let timer = setImmediate(function tick() {
    turn++;
    timer = setImmediate(tick);
  });
  return { now: () => turn, stop: () => clearImmediate(timer) };
}

describe('lists in turns', () => {
  it('starts one list per turn of the event loop, however many came in at once, the accounts in rotation', async () => {
    const turns = loopTurns();
    const started: [string, number][] = [];
    // As a poll of the sockets hands over several requests at once: synchronous lists, all asked for in one go.
    const list = (account: string, name: string) => inAccountTurn(account, async () => void started.push([name, turns.now()]));
    const lists = [list('a', 'a1'), list('a', 'a2'), list('a', 'a3'), list('c', 'c1'), list('c', 'c2')];
    try {
      expect(started).toEqual([]); // none ran where they were asked for
      await Promise.all(lists);
    } finally {
      turns.stop();
    }
    expect(started.map(([name]) => name)).toEqual(['a1', 'c1', 'a2', 'c2', 'a3']);
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
