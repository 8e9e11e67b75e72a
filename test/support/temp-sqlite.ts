import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteDatabase, SqliteDatabase } from '../../src/storage/sqlite-database';
import { makeDataDir } from './test-app';

/** A fresh SQLite file in a temp dir, opened as the service opens it; dispose closes and removes it. */
export function openTempSqlite(): { db: SqliteDatabase; dispose(): void } {
  const dir = makeDataDir();
  const db = openSqliteDatabase(join(dir, 'service.sqlite'), { durable: true });
  return {
    db,
    dispose() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
