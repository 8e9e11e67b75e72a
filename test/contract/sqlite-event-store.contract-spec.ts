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
