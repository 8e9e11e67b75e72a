import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { makeDataDir } from '../support/test-app';
import { eventStoreContract } from './event-store.contract';

eventStoreContract('SQLite (embedded default)', async () => {
  const dir = makeDataDir();
  const db = openSqliteDatabase(join(dir, 'service.sqlite'));
  const store = new SqliteEventStore(db, 50);
  return {
    store,
    async dispose() {
      await store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
