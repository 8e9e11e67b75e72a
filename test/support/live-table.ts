import type { SqliteDatabase } from '../../src/storage/sqlite-database';

/** The SQLite table of a read model's live generation, for tests that read the file directly. */
export function liveTable(db: SqliteDatabase, collection: string): string {
  const generation = db.prepare("SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'").pluck().get(collection) as
    number | undefined;
  if (generation === undefined) throw new Error(`no live generation of ${collection}`);
  return `${collection}__g${generation}`;
}
