import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
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
  mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}
