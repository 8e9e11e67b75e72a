import type BetterSqlite3 from 'better-sqlite3';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { StoreUnavailableError } from './store-unavailable.error';

/**
 * better-sqlite3, in the line that runs on this Node. Line 13 (prebuilt for N-API) needs Node 22+;
 * line 12, the last for Node 20, aborts the process on Node 24.19+ whenever the garbage collector
 * frees one of its statements (WiseLibs/better-sqlite3#1515). npm installs 13, an optional
 * dependency, only where its engines allow, so on Node 20 line 12 is the only one there.
 */
export const Database: typeof BetterSqlite3 =
  Number(process.versions.node.split('.')[0]) >= 22 ? require('better-sqlite3-v13') : require('better-sqlite3');

export type SqliteDatabase = BetterSqlite3.Database;

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
  // First: switching a new file to WAL takes a lock that another process opening it (a second
  // worker) may hold for a moment, and without a timeout that is an immediate SQLITE_BUSY.
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
  // Deleted and overwritten content is zeroed, not just unlinked: an erased record's values leave
  // no copy in a free page or a free part of a page (see checkpointAndTruncate for the log).
  db.pragma('secure_delete = ON');
  return db;
}

/**
 * Copies every page of the write-ahead log into the database file and truncates the log to zero
 * bytes: after an erasure, no frame of it keeps an old page. Waits (busy_timeout) for other
 * connections, other processes' too, to finish what they read; 503 if they never do.
 */
export function checkpointAndTruncate(db: SqliteDatabase): void {
  const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
  if (result.busy !== 0) {
    throw new StoreUnavailableError('SQLite', 'the write-ahead log could not be checkpointed: other connections kept reading');
  }
}
