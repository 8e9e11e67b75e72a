import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { openTempSqlite } from '../support/temp-sqlite';
import { readStoreContract } from './read-store.contract';

readStoreContract('SQLite (embedded default)', async () => {
  const sqlite = openTempSqlite();
  const store = new SqliteReadStore(sqlite.db);
  return {
    store,
    async dispose() {
      await store.close();
      sqlite.dispose();
    },
  };
});
