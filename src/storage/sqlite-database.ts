import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type SqliteDatabase = Database.Database;

/**
 * Opens the embedded default's single SQLite file, shared by the event store and the read store.
 * WAL lets readers run beside the writer; synchronous=FULL makes every commit reach the disk before
 * it returns, so a 2xx survives a crash or power loss right after it.
 */
export function openSqliteDatabase(file: string): SqliteDatabase {
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  return db;
}
