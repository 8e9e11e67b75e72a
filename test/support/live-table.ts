import type Database from 'better-sqlite3';

/** The SQLite table of a read model's live generation, for tests that read the file directly. */
export function liveTable(db: Database.Database, collection: string): string {
  const generation = db
    .prepare("SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'")
    .pluck()
    .get(collection) as number | undefined;
  if (generation === undefined) throw new Error(`no live generation of ${collection}`);
  return `${collection}__g${generation}`;
}
