import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { NewEvent, START, WrongExpectedRevisionError } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { openTempSqlite } from '../support/temp-sqlite';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('SQLite (embedded default)', async () => {
  const sqlite = openTempSqlite();
  const store = new SqliteEventStore(sqlite.db, 50);
  return {
    store,
    async dispose() {
      await store.close();
      sqlite.dispose();
    },
  };
});

describe('SQLite event store: group commit', () => {
  const event = (id: string = randomUUID()): NewEvent => ({
    id,
    type: 'Happened',
    data: {},
    metadata: { accountId: 'acc', correlationId: 'corr', causationId: 'cause', schemaVersion: 1 },
  });

  it('commits appends asked for together, each on its own: a refused one leaves nothing and spoils none', async () => {
    const sqlite = openTempSqlite();
    const store = new SqliteEventStore(sqlite.db, 50);
    try {
      const taken = event();
      await store.appendToStream('taken', [taken], 'no_stream');
      const outcomes = await Promise.allSettled([
        store.appendToStream('first', [event()], 'no_stream'),
        store.appendToStream('taken', [event()], 'no_stream'), // wrong revision
        store.appendToStream('half', [event(), event(taken.id)], 'no_stream'), // its second event fails on insert
        store.appendToStream('first', [event()], 0), // sees the first append of its own group
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect((await store.readStream('first')).map((e) => e.revision)).toEqual([0, 1]);
      expect(await store.readStream('half')).toEqual([]);
      expect(await store.readStream('taken')).toHaveLength(1);
    } finally {
      await store.close();
      sqlite.dispose();
    }
  });

  it('answers an append, and hands its event to subscribers, only once a sync of the WAL has it on disk', async () => {
    const sqlite = openTempSqlite(); // durable, as the service opens the event store
    const store = new SqliteEventStore(sqlite.db, 10);
    // Holds each sync until the test lets it go.
    const held: (() => void)[] = [];
    const realSync = fs.fdatasync;
    const sync = jest.spyOn(fs, 'fdatasync').mockImplementation((fd: number, done: (error: Error | null) => void) => {
      held.push(() => realSync(fd, done));
    });
    const abort = new AbortController();
    try {
      // Commits no longer sync inside SQLite, on the event loop: the store does, in the thread pool.
      expect(sqlite.db.pragma('synchronous', { simple: true })).toBe(1);
      const seen: string[] = [];
      void (async () => {
        for await (const batch of store.subscribeToAll(START, { signal: abort.signal })) seen.push(...batch.events.map((e) => e.streamId));
      })();
      let answered = false;
      const append = store.appendToStream('one', [event()], 'no_stream').then(() => (answered = true));
      await waitUntil(() => held.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the subscriber polls every 10 ms meanwhile
      expect(answered).toBe(false);
      expect(seen).toEqual([]);
      // Committed, so visible to a reader of the stream, but not confirmed until synced.
      expect(await store.readStream('one')).toHaveLength(1);

      // Appends asked for while a sync runs share the next one.
      const more = [store.appendToStream('two', [event()], 'no_stream'), store.appendToStream('three', [event()], 'no_stream')];
      await new Promise((resolve) => setTimeout(resolve, 50));
      held.shift()!();
      await append;
      await waitUntil(() => held.length === 1);
      held.shift()!();
      await Promise.all(more);
      await waitUntil(() => seen.length === 3);
      expect(seen).toEqual(['one', 'two', 'three']);
      expect(sync).toHaveBeenCalledTimes(2);
    } finally {
      abort.abort();
      sync.mockRestore();
      await store.close();
      sqlite.dispose();
    }
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}
