import { inAccountTurn } from '../../src/http/account-turns';

describe("an account's lists in turns", () => {
  it('runs one list of an account at a time, letting the event loop take other requests between them', async () => {
    const seen: string[] = [];
    let finishFirst!: () => void;
    const first = inAccountTurn('a', async () => {
      seen.push('a1 start');
      await new Promise<void>((resolve) => (finishFirst = resolve));
      seen.push('a1 end');
      // A request that reached the event loop while a1 ran: its callback waits for the loop's next turn.
      setImmediate(() => seen.push('waiting request'));
    });
    const second = inAccountTurn('a', async () => void seen.push('a2'));
    const third = inAccountTurn('a', async () => void seen.push('a3'));
    await inAccountTurn('b', async () => void seen.push('b')); // another account: not in a's line
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['a1 start', 'b']);
    finishFirst();
    await Promise.all([first, second, third]);
    expect(seen).toEqual(['a1 start', 'b', 'a1 end', 'waiting request', 'a2', 'a3']);
  });

  it('lets the next one in when a list fails', async () => {
    await expect(inAccountTurn('c', async () => Promise.reject(new Error('store down')))).rejects.toThrow('store down');
    await expect(inAccountTurn('c', async () => 'next')).resolves.toBe('next');
  });
});
