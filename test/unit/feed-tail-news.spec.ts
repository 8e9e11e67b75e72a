import { Position, START } from '../../src/event-store/event-store.port';
import type { Response } from 'express';
import { PassThrough } from 'node:stream';
import { streamFeed } from '../../src/feed/feed-stream';
import type { FeedPage } from '../../src/feed/feed.queries';
import { FeedTail } from '../../src/feed/feed-tail';
import type { Projector } from '../../src/projections/projector';
import type { ReadDocument, ReadStore } from '../../src/read-store/read-store.port';

/** A projector as FeedTail sees it: whether it folds, its checkpoint, and its news. */
function fakeProjector(folding: boolean) {
  const listeners: ((written: ReadDocument[] | null) => void)[] = [];
  const projector = {
    folding,
    checkpoint: START,
    onAdvance: (listener: (written: ReadDocument[] | null) => void) => (listeners.push(listener), () => undefined),
  };
  return { projector: projector as unknown as Projector, fold: (written: ReadDocument[] | null) => listeners.forEach((l) => l(written)) };
}

const doc = (accountId: string): ReadDocument => ({ id: '1', accountId, revision: 0, seq: 1, deleted: false, created: 0, fields: {} });
const settled = async (p: Promise<void>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 30))]);

describe('FeedTail: news for the consumers at the feed’s end', () => {
  it('on the instance that folds, wakes the consumers of the accounts a batch touched, and only those', async () => {
    const { projector, fold } = fakeProjector(true);
    const tail = new FeedTail(projector, {} as ReadStore);
    const a = tail.watch('a');
    const b = tail.watch('b');
    fold([doc('a')]);
    expect(await settled(a.changed)).toBe(true);
    expect(await settled(b.changed)).toBe(false);
    fold(null); // another instance folded: whose, unknown
    expect(await settled(b.changed)).toBe(true);
    tail.close();
  });

  it('elsewhere, reads the stored checkpoint while anyone waits, and wakes every consumer when it moved; reads nothing when no one waits', async () => {
    const { projector } = fakeProjector(false);
    let position: Position = { commit: 5n, prepare: 5n };
    let reads = 0;
    const readStore = {
      status: async () => (reads++, { live: { generation: 1, position, failure: null, updatedAt: 0 }, building: null }),
    } as unknown as ReadStore;
    const tail = new FeedTail(projector, readStore, 10);
    expect(await tail.bound()).toEqual(position);
    expect(reads).toBe(1);
    const second = tail.watch('a');
    await new Promise((r) => setTimeout(r, 50));
    expect(await settled(second.changed)).toBe(false); // polled, but nothing moved
    expect(reads).toBeGreaterThan(1);
    position = { commit: 6n, prepare: 6n };
    expect(await new Promise<boolean>((r) => void second.changed.then(() => r(true)))).toBe(true);
    expect(await tail.bound()).toEqual(position);
    second.stop();
    await new Promise((r) => setTimeout(r, 30));
    const idle = reads;
    await new Promise((r) => setTimeout(r, 60));
    expect(reads).toBe(idle);
    tail.close();
  });

  it('elsewhere, wakes at the next poll the consumers waiting since before a page read found the stored checkpoint moved; the reader itself is not woken at once', async () => {
    const { projector } = fakeProjector(false);
    let position: Position = { commit: 5n, prepare: 5n };
    const readStore = { status: async () => ({ live: { generation: 1, position, failure: null, updatedAt: 0 }, building: null }) } as unknown as ReadStore;
    jest.useFakeTimers(); // the poll's pace, exactly
    try {
      const tail = new FeedTail(projector, readStore, 40);
      await tail.bound();
      const waiting = tail.watch('a');
      position = { commit: 6n, prepare: 6n };
      const reading = tail.watch('b'); // another consumer, watching before its read
      const woken = new Set<string>();
      void waiting.changed.then(() => woken.add('a'));
      void reading.changed.then(() => woken.add('b'));
      expect(await tail.bound()).toEqual(position);
      await jest.advanceTimersByTimeAsync(39);
      expect(woken).toEqual(new Set()); // not at once: readers would read back to back while the checkpoint moves
      await jest.advanceTimersByTimeAsync(1);
      expect(woken).toEqual(new Set(['a', 'b'])); // at the poll
      tail.close();
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('streamFeed: heartbeats', () => {
  /** The heartbeats a stream at the feed's end sent in 650 ms at heartbeatMs 100 (about 6), its pages empty. */
  async function heartbeatsIn650ms(read: () => Promise<FeedPage>, changed: () => Promise<void>): Promise<number> {
    const res = Object.assign(new PassThrough(), { status: () => res, setHeader: () => res });
    let sent = '';
    res.on('data', (chunk: Buffer) => (sent += chunk.toString()));
    const closed = new AbortController();
    const streaming = streamFeed(res as unknown as Response, {
      from: START,
      read,
      watch: () => ({ changed: changed(), stop: () => undefined }),
      closed: closed.signal,
      heartbeatMs: 100,
      onEnd: () => undefined,
    });
    await new Promise((r) => setTimeout(r, 650));
    closed.abort();
    await streaming;
    return sent.split(': idle').length - 1;
  }
  const empty = (): FeedPage => ({ entries: [], next: START });

  // At least 3 of the about 6: none came before the mends, whatever the machine's load.
  it('sends one heartbeatMs after whatever it sent last, however often news comes to nothing (another account’s)', async () => {
    // News every 20 ms, each of it nothing for this consumer.
    expect(
      await heartbeatsIn650ms(
        async () => empty(),
        () => new Promise<void>((r) => setTimeout(r, 20)),
      ),
    ).toBeGreaterThanOrEqual(3);
  });

  it('sends a heartbeat that is due even when news has come during the page read', async () => {
    // News already there each time the stream waits: the checkpoint moved while it read.
    const slowRead = async () => (await new Promise((r) => setTimeout(r, 10)), empty());
    expect(await heartbeatsIn650ms(slowRead, () => Promise.resolve())).toBeGreaterThanOrEqual(3);
  });
});
