import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { makeDataDir } from '../support/test-app';
import { readStoreContract } from './read-store.contract';

readStoreContract('SQLite (embedded default)', async () => {
  const dir = makeDataDir();
  const db = openSqliteDatabase(join(dir, 'service.sqlite'));
  const store = new SqliteReadStore(db);
  return {
    store,
    async dispose() {
      await store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
