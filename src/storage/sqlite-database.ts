import { Logger } from '@nestjs/common';
import BetterSqlite3 from 'better-sqlite3';
import { closeSync, fdatasync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { StoreUnavailableError } from './store-unavailable.error';

/** better-sqlite3 13: prebuilt inside its package (N-API), so an install compiles nothing. */
export const Database: typeof BetterSqlite3 = BetterSqlite3;

export type SqliteDatabase = BetterSqlite3.Database;

/**
 * The parameter of a text column's equality in a statement that reads an index in order (ORDER BY,
 * max, min): `stream_id = ${TEXT_KEY}`. Bare, SQLite 3.54 (better-sqlite3 13) prepares such a
 * statement again on every run (3.53 does not). BINARY is the collation a text column
 * compares with when it declares none, as none of the service's do: same rows, same plan.
 */
export const TEXT_KEY = '? COLLATE BINARY';

/** Runs `work` in a transaction (a savepoint inside one) and returns what it returns. */
type InTransaction = <T>(work: () => T) => T;

/**
 * One transaction function for any work, made once per connection: `db.transaction(fn)` builds four
 * wrapper functions and their properties each call, a cost a read model's commit would pay on every write.
 */
export function transactions(db: SqliteDatabase): { immediate: InTransaction; deferred: InTransaction } {
  const run = db.transaction((work: () => unknown) => work());
  return {
    immediate: <T>(work: () => T) => run.immediate(work) as T,
    deferred: <T>(work: () => T) => run.deferred(work) as T,
  };
}

/**
 * Opens a connection to one of the embedded default's SQLite files. WAL lets readers run beside the
 * writer. A `durable` connection (the event store's, the key store's) is opened at
 * synchronous=FULL, which its store hands to WalSync: commits at NORMAL, each answered only once the
 * WAL holding it is synced, so a 2xx survives a crash or power loss right after it. The read models
 * need no more than NORMAL (still atomic and safe from a process crash; what a power loss could take
 * is refolded from the events, since each batch carries its checkpoint): they share the event
 * store's connection where both are on SQLite (sharedSqliteConnection), else open one not durable.
 * `cacheMiB`: a page cache of that size rather than SQLite's default 2 MiB, for a bulk import, whose
 * connections also wait for the write lock up to a minute rather than 5 s: its appends and its fold
 * thread's commits take turns at it, each holding it a while, on a machine the import keeps busy.
 */
export function openSqliteDatabase(file: string, { durable, cacheMiB }: { durable: boolean; cacheMiB?: number }): SqliteDatabase {
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
  // A bulk import's page cache (SQLite's default is 2 MiB): its inserts go to random places of the
  // stores' indexes, and each page missing from the cache is read again.
  if (cacheMiB) {
    db.pragma(`cache_size = -${cacheMiB * 1024}`);
    db.pragma('busy_timeout = 60000');
  }
  return db;
}

/**
 * Copies every page of the write-ahead log into the database file and truncates the log to zero
 * bytes: after an erasure, no frame of it keeps an old page. Waits (busy_timeout) for other
 * connections, other processes' too, to finish what they read; 503 if they never do. A checkpoint
 * under way elsewhere (a checkpoint thread's) makes SQLite refuse at once, with no busy handler:
 * that is waited out here, for as long as busy_timeout.
 */
export async function checkpointAndTruncate(db: SqliteDatabase): Promise<void> {
  const deadline = Date.now() + (db.pragma('busy_timeout', { simple: true }) as number);
  for (;;) {
    const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
    if (result.busy === 0) return;
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError('SQLite', 'the write-ahead log could not be checkpointed: other connections kept reading');
    }
    await sleep(5);
  }
}

/** `PRAGMA synchronous` as a number: 2 is FULL. */
const SYNCHRONOUS_FULL = 2;

/** fdatasync in libuv's thread pool: the event loop serves on while the disk works. */
const syncData = (fd: number) => new Promise<void>((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));

/** How often the checkpoint thread copies the WAL into the database (see WalSync). */
const CHECKPOINT_EVERY_MS = 250;
/**
 * The WAL's size, in pages (16 MB), past which the checkpoint thread starts it over (see WalSync):
 * the larger, the rarer the commits' wait for that, and the larger the file on disk and the longer
 * a restart's recovery reads it.
 */
const RESTART_PAGES = 4_096;
/**
 * The WAL's size, in pages (about 165 MB), at which a commit checkpoints it itself, should the
 * thread not (it failed, or readers kept it from starting the log over): the file stays bounded.
 */
const COMMIT_CHECKPOINT_PAGES = 40_000;

/**
 * The checkpoint thread's script (given as text, so it runs the same from the sources and as
 * built): its own connection to the file, and every `everyMs`:
 * - a PASSIVE checkpoint, beside the commits. At NORMAL it syncs the WAL before copying, but the
 *   database file only once it has copied the whole log, which under steady writes it never has (a
 *   commit lands during it), so the thread syncs what it copied itself;
 * - past `restartPages`, a RESTART checkpoint: it holds the write lock while it copies what was
 *   committed meanwhile and syncs the log and the database file, so that the next commit finds the
 *   log wholly copied and starts it over. With no busy timeout, it gives way at once to a commit
 *   under way, or copies only up to a reader still in the log: the next round tries again.
 * It syncs the database file through a descriptor WalSync opened: closing one here would drop the
 * process's POSIX locks on the file, its SQLite connections' included.
 */
const CHECKPOINT_SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
const { fdatasyncSync } = require('node:fs');
const db = new (require(workerData.driver))(workerData.file);
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 0');
let copied = 0; // the frames copied at the last round: none since, nothing to sync
const timer = setInterval(() => {
  const [{ log, checkpointed }] = db.pragma('wal_checkpoint(PASSIVE)');
  if (checkpointed > 0 && checkpointed !== copied) fdatasyncSync(workerData.fd);
  copied = checkpointed;
  if (log >= workerData.restartPages && checkpointed === log) db.pragma('wal_checkpoint(RESTART)');
}, workerData.everyMs);
parentPort.once('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

/**
 * A durable connection's WAL work, off the event loop.
 *
 * Syncs: at synchronous=FULL, SQLite fsyncs the WAL inside each commit, on the event loop: every
 * request waits out the disk. Instead the connection commits at NORMAL, and `upTo(mark)` syncs the
 * WAL file in libuv's thread pool; callers who ask while a sync runs share the next one. `mark()`
 * says how far the commits made so far go, in the store's own measure (the event store's head
 * position, which counts every process's events; the key store's count of its own commits): what
 * is committed when a sync starts is durable when it ends.
 *
 * Checkpoints: SQLite copies the WAL into the database in the connection that commits, once the
 * WAL passes 1,000 pages: a thousand page writes and two fsyncs on the event loop. A thread of its
 * own checkpoints the file every CHECKPOINT_EVERY_MS instead, and syncs the database file after.
 * The log starts over (from its first page) only once wholly copied with no commit since, which
 * under steady writes a checkpoint beside the commits never leaves it. So once the log passes
 * RESTART_PAGES, the thread copies the rest holding the write lock: commits (every process's) wait
 * for those few milliseconds, in SQLite's busy handler (asleep 1 ms, then 2, 5, …), on their event
 * loops; the next commit starts the log over, and syncs its new header there (a fraction of a
 * millisecond). The commit's own checkpoint waits for COMMIT_CHECKPOINT_PAGES.
 *
 * `forDurable` gives none for a connection that is not durable: there, everything counts as synced.
 */
export class WalSync {
  private durable = 0;
  private syncing?: Promise<void>;
  private closed = false;
  private closing?: Promise<void>;
  private readonly checkpoints: Worker;
  private readonly checkpointsEnded: Promise<unknown>;

  private constructor(
    private readonly db: SqliteDatabase,
    /** The WAL file, kept open: SQLite keeps it while a connection is open. */
    private readonly wal: number,
    /** The database file, read-only, for the thread's syncs of it (see CHECKPOINT_SCRIPT). */
    private readonly file: number,
    private readonly mark: () => number,
  ) {
    this.checkpoints = new Worker(CHECKPOINT_SCRIPT, {
      eval: true,
      workerData: { driver: require.resolve('better-sqlite3'), file: db.name, fd: file, everyMs: CHECKPOINT_EVERY_MS, restartPages: RESTART_PAGES },
    });
    this.checkpointsEnded = new Promise((resolve) => this.checkpoints.once('exit', resolve));
    // Should the thread fail, the commits' own checkpoints go on: nothing else depends on it. But
    // each then copies up to COMMIT_CHECKPOINT_PAGES on the event loop: the operators hear of it.
    this.checkpoints.on('error', (error) =>
      new Logger('Storage').warn(
        `The thread checkpointing ${db.name} failed (${error.message}): commits checkpoint its write-ahead log themselves, on the event loop, until the service restarts`,
      ),
    );
    this.checkpoints.unref();
  }

  static forDurable(db: SqliteDatabase, mark: () => number): WalSync | undefined {
    if (db.pragma('synchronous', { simple: true }) !== SYNCHRONOUS_FULL) return undefined;
    db.pragma('synchronous = NORMAL');
    db.pragma(`wal_autocheckpoint = ${COMMIT_CHECKPOINT_PAGES}`);
    // The mode is the database file's, in case this open makes the file.
    return new WalSync(db, openSync(`${db.name}-wal`, 'a', 0o600), openSync(db.name, 'r'), mark);
  }

  /** Resolves once every commit up to `mark` is on disk: at the end of the sync under way if that covers it, else of the next. */
  async upTo(mark: number): Promise<void> {
    while (this.durable < mark) {
      if (this.closed) throw new Error('The store is closed: what it committed last may not be on disk');
      if (!this.syncing) {
        const upTo = this.mark();
        this.syncing = syncData(this.wal)
          .then(() => void (this.durable = Math.max(this.durable, upTo)))
          .finally(() => (this.syncing = undefined));
      }
      await this.syncing;
    }
  }

  /**
   * Waits out the sync and the checkpoint under way, then closes the connection (its store's owner
   * may close it again: better-sqlite3 does nothing then), and only after it the files' descriptors
   * (see CHECKPOINT_SCRIPT; any other connection of this process to the file is closed before).
   * Once only, however often called: a second closeSync of a descriptor would close whatever file
   * the process has opened under that number since.
   */
  close(): Promise<void> {
    return (this.closing ??= this.closeOnce());
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    this.checkpoints.ref(); // unreferenced so as not to hold the process open, but its end is awaited here
    this.checkpoints.postMessage('stop');
    await Promise.all([this.syncing?.catch(() => undefined), this.checkpointsEnded]);
    this.db.close();
    closeSync(this.wal);
    closeSync(this.file);
  }
}
