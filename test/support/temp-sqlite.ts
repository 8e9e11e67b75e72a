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

/** The SQLite table that holds a read model's live generation, for tests that compare whole tables. */
export function liveTable(db: { prepare(sql: string): { pluck(): { get(...params: unknown[]): unknown } } }, collection: string): string {
  const generation = db
    .prepare(`SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'`)
    .pluck()
    .get(collection);
  if (generation === undefined) throw new Error(`no live generation of ${collection}`);
  return `${collection}__g${generation}`;
}
