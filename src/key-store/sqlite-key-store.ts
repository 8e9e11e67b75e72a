import type { Statement } from 'better-sqlite3';
import { checkpointAndTruncate, SqliteDatabase, WalSync } from '../storage/sqlite-database';
import { sqliteFailure } from '../storage/store-unavailable.error';
import { randomBytesPooled } from './random-bytes';
import { KEY_BYTES, type KeyStore, type PendingErasure } from './key-store.port';

interface PendingObtain {
  keyId: string;
  resolve: (key: Buffer | null) => void;
  reject: (error: unknown) => void;
}

/**
 * Data keys in their own SQLite file (`keys.sqlite` beside the store), so that the keys and the
 * events they encrypt are never in one file, one copy or one backup by accident. The connection is
 * durable (a key must be on disk before the first event sealed with it) and deletes securely: a
 * destroyed key's bytes are zeroed in the page, and the write-ahead log is then checkpointed and
 * truncated, so no frame keeps the old page.
 *
 * Keys asked for within one turn of the event loop are made in one transaction, and a key is
 * handed out once that transaction is synced, off the event loop (WalSync), as the event store's
 * appends are: concurrent creates share one fsync, and requests are served while it runs.
 */
/** The largest number of ids destroyedAmong binds one by one (a list's page at most), each count with a statement of its own. */
const DESTROYED_STATEMENTS = 100;

/**
 * Makes each id's key, inside the caller's transaction: the key made, or (no row inserted: the id
 * had one) the key it had, or null if destroyed. No RETURNING: SQLite gathers its rows in a table
 * of their own, a third of the insert's cost. In the order asked, the records' order: a rebuild then
 * reads the keys of records made one after another as the rows that follow (sealing/open-worker.ts),
 * where the order of their ids would make each a lookup of its own. The key store's way, and the
 * import's thread's (open-worker.ts) on its own connection.
 */
export function keyMaking(db: SqliteDatabase): (keyIds: string[]) => (Buffer | null)[] {
  const insert = db.prepare<[string, Buffer]>('INSERT INTO data_keys (key_id, key) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING');
  const select = db.prepare<[string], { key: Buffer | null }>('SELECT key FROM data_keys WHERE key_id = ?');
  return (keyIds) =>
    keyIds.map((keyId) => {
      const key = randomBytesPooled(KEY_BYTES);
      return insert.run(keyId, key).changes === 1 ? key : select.get(keyId)!.key;
    });
}

export class SqliteKeyStore implements KeyStore {
  readonly name = 'SQLite';
  readonly file: string | undefined;
  private pending: PendingObtain[] = [];
  private readonly selectOne: Statement<[string], { key: Buffer | null }>;
  private readonly selectMany: Statement<[string], { key_id: string; key: Buffer | null }>;
  /** destroyedAmong's statements by the number of ids, prepared on first use (see DESTROYED_STATEMENTS). */
  private readonly selectDestroyed = new Map<number, Statement<string[], string>>();
  private readonly markDestroyed: Statement;
  private readonly selectPending: Statement<[{ prefix: string }], { key_id: string; erased_by: string }>;
  private readonly markFinished: Statement;
  private readonly markReopened: Statement;
  private readonly obtainGroup: (group: PendingObtain[]) => (Buffer | null)[];
  /** Write transactions committed so far, and the sync that makes them durable (none on a connection that is not durable). */
  private commits = 0;
  private readonly walSync?: WalSync;

  constructor(private readonly db: SqliteDatabase) {
    this.file = db.memory ? undefined : db.name;
    db.exec(`
      CREATE TABLE IF NOT EXISTS data_keys (
        key_id    TEXT    PRIMARY KEY,
        key       BLOB,
        erased_by TEXT,
        erased_at INTEGER,
        pending   INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX IF NOT EXISTS data_keys_pending ON data_keys (key_id) WHERE pending = 1;
      -- The destroyed keys alone: every read and list asks which of its records' keys are among them.
      CREATE INDEX IF NOT EXISTS data_keys_destroyed ON data_keys (key_id) WHERE key IS NULL;
    `);
    this.selectOne = db.prepare('SELECT key FROM data_keys WHERE key_id = ?');
    this.selectMany = db.prepare('SELECT key_id, key FROM data_keys WHERE key_id IN (SELECT value FROM json_each(?))');
    this.markDestroyed = db.prepare(
      `INSERT INTO data_keys (key_id, key, erased_by, erased_at, pending) VALUES (@keyId, NULL, @erasedBy, @now, 1)
       ON CONFLICT (key_id) DO UPDATE SET key = NULL, erased_by = @erasedBy, erased_at = @now, pending = 1
       WHERE data_keys.erased_at IS NULL`,
    );
    this.selectPending = db.prepare('SELECT key_id, erased_by FROM data_keys WHERE pending = 1 AND substr(key_id, 1, length(@prefix)) = @prefix');
    this.markFinished = db.prepare('UPDATE data_keys SET pending = 0 WHERE key_id = ?');
    this.markReopened = db.prepare('UPDATE data_keys SET pending = 1, erased_by = coalesce(erased_by, @erasedBy) WHERE key_id = @keyId AND key IS NULL');
    const make = keyMaking(db);
    const group = db.transaction((obtains: PendingObtain[]) => make(obtains.map(({ keyId }) => keyId)));
    this.obtainGroup = (obtains) => group.immediate(obtains);
    this.walSync = WalSync.forDurable(db, () => this.commits);
  }

  async obtain(keyId: string, { isNew = false } = {}): Promise<Buffer | null> {
    const row = isNew ? undefined : this.selectOne.get(keyId);
    if (row) {
      // Made here by a group whose sync may still be under way: wait for it. A key another process
      // made is synced before that process uses it, and no one learns a record's id before its
      // create is answered.
      await this.walSync?.upTo(this.commits);
      return row.key;
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ keyId, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => void this.obtainPending());
    });
  }

  async getMany(keyIds: string[]): Promise<Map<string, Buffer | null>> {
    const found = new Map<string, Buffer | null>();
    if (keyIds.length === 0) return found;
    for (const row of this.selectMany.all(JSON.stringify(keyIds))) found.set(row.key_id, row.key);
    return found;
  }

  async destroyedAmong(keyIds: string[]): Promise<Set<string>> {
    if (keyIds.length === 0) return new Set();
    // `IN (?, ?, ...)`, one statement per number of ids: json_each's parse cost more than the lookup.
    // Past a page's size, one statement for any number.
    if (keyIds.length > DESTROYED_STATEMENTS) return new Set(this.destroyedStatement(0).all(JSON.stringify(keyIds)));
    return new Set(this.destroyedStatement(keyIds.length).all(...keyIds));
  }

  /** Selects the destroyed among `count` ids bound one by one, or (0) among the ids of one JSON array. */
  private destroyedStatement(count: number): Statement<string[], string> {
    let statement = this.selectDestroyed.get(count);
    if (!statement) {
      const ids = count === 0 ? 'SELECT value FROM json_each(?)' : Array.from({ length: count }, () => '?').join(', ');
      // By the index of the destroyed keys, which SQLite would not choose over the primary key's: a
      // lookup in a small index, not in every key's and then the row (half the CPU a read spends here).
      statement = this.db
        .prepare<string[], string>(`SELECT key_id FROM data_keys INDEXED BY data_keys_destroyed WHERE key_id IN (${ids}) AND key IS NULL`)
        .pluck();
      this.selectDestroyed.set(count, statement);
    }
    return statement;
  }

  async destroy(keyId: string, erasedBy: string): Promise<void> {
    try {
      this.markDestroyed.run({ keyId, erasedBy, now: Date.now() });
      await this.synced();
      await checkpointAndTruncate(this.db);
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async pendingErasures(prefix: string): Promise<PendingErasure[]> {
    return this.selectPending.all({ prefix }).map((r) => ({ keyId: r.key_id, erasedBy: r.erased_by }));
  }

  async finishErasure(keyId: string): Promise<void> {
    try {
      this.markFinished.run(keyId);
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async reopenErasure(keyId: string, erasedBy: string): Promise<void> {
    try {
      this.markReopened.run({ keyId, erasedBy });
      await this.synced();
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async close(): Promise<void> {
    await this.walSync?.close();
    this.db.close();
  }

  private async obtainPending(): Promise<void> {
    const group = this.pending;
    this.pending = [];
    let keys: (Buffer | null)[];
    try {
      keys = this.obtainGroup(group);
      await this.synced();
    } catch (error) {
      for (const o of group) o.reject(sqliteFailure(error));
      return;
    }
    group.forEach((o, i) => o.resolve(keys[i]));
  }

  /** Counts the commit just made and resolves once it is on disk. */
  private synced(): Promise<void> {
    return this.walSync?.upTo(++this.commits) ?? Promise.resolve();
  }
}
