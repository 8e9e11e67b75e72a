import { randomUUID } from 'node:crypto';
import { NewEvent, WrongExpectedRevisionError } from '../../src/event-store/event-store.port';
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
});
