import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteDatabase, SqliteDatabase } from '../../src/storage/sqlite-database';
import { makeDataDir } from './test-app';

/**
 * A fresh SQLite file in a temp dir, opened as the service opens it; dispose closes and removes it.
 * Close the durable stores made on it first: each runs a checkpoint thread on a connection of its
 * own, which, left running, makes the file again while the directory is being removed (ENOTEMPTY).
 */
export function openTempSqlite(): { db: SqliteDatabase; file: string; dispose(): void } {
  const dir = makeDataDir();
  const file = join(dir, 'service.sqlite');
  const db = openSqliteDatabase(file, { durable: true });
  return {
    db,
    file,
    dispose() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
