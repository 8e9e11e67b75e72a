import Database from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

export type SqliteDatabase = Database.Database;

/**
 * Opens a connection to the embedded default's single SQLite file. WAL lets readers run beside the
 * writer. The event store's connection is `durable` (synchronous=FULL): every commit reaches the
 * disk before it returns, so a 2xx survives a crash or power loss right after it. The read models'
 * connection is not (synchronous=NORMAL): still atomic and safe from a process crash, and what a
 * power loss could take is refolded from the events, since each batch carries its checkpoint.
 */
export function openSqliteDatabase(file: string, { durable }: { durable: boolean }): SqliteDatabase {
  // Only the service's user may read its data: a new directory is 0700, a new file 0600 (SQLite
  // gives its -wal and -shm files the database file's mode).
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  closeSync(openSync(file, 'a', 0o600));
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}
