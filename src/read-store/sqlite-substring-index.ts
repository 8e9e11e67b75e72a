import type { SqliteDatabase } from '../storage/sqlite-database';
import type { CollectionSchema, FindQuery } from './read-store.port';
import { filterColumn, filterKey, tableName } from './sqlite-read-tables';
import { substringFields, substringQuery, substringTokens } from './substrings';

/**
 * FTS5's in-memory hash of pending tokens while a substring index is filled from its table, and
 * FTS5's default, set back after. A larger hash fills it no faster (docs/benchmarks.md), and holds
 * more memory at the promotion.
 */
const FILL_HASH_BYTES = 8 * 1024 * 1024;
const FTS5_HASH_BYTES = 1024 * 1024;

/**
 * How long rows changed by a commit may wait before their tokens go in the substring index (see
 * SqliteSubstringIndexes): a find through the index brings it up to date first, so no read waits on this.
 */
const FLUSH_MS = 100;
/** Documents in one commit from which their tokens go in the index with the commit itself. */
export const SUBSTRINGS_FLUSH_AT = 100;
/** How long a flush that could not be done at once (another process writing, a full disk) waits to try again. */
const RETRY_MS = 1000;

/** The SQL function the substring index is filled with: substringTokens(account, ...values). */
const TOKENS_FUNCTION = 'substring_tokens';

/** The rows waiting for a table's substring index: whether any wait, and what takes them in. */
export interface Pending {
  waiting(): boolean;
  /** In a transaction of its own, or within the one under way. */
  flush(): void;
}

/** A generation table's substring index: named outside `<collection>__g<n>`, the tables' own pattern. */
const substringsTable = (table: string) => `substrings_${table}`;
/** The rows of a generation table changed since its substring index was last brought up to date (see keepByFlush). */
const pendingTable = (table: string) => `substrings_pending_${table}`;
/** The SQL of a row's substring tokens (substrings.ts), from the table's columns. */
const tokensOf = (fields: string[], table: string) =>
  `${TOKENS_FUNCTION}(${[`${table}.account_id`, ...fields.map((f) => `${table}.${filterColumn(f)}`)].join(', ')})`;

/**
 * The SQL of whether a row has tokens: some substring value not empty (substringTokens gives ''
 * otherwise). On the columns, so that each row's tokens are made once: a test on the tokens
 * themselves, through a subquery naming them, makes them twice (SQLite flattens the subquery). None
 * where the collection has no substring field now (a generation indexed when it had one).
 */
const holdsSubstrings = (fields: string[], table: string) =>
  fields.length === 0 ? '0' : `(${fields.map((f) => `${table}.${filterColumn(f)} != ''`).join(' OR ')})`;

/**
 * The substring indexes of the SQLite read store's tables. Each is an FTS5 table of the live
 * records' tokens (substrings.ts) by seq, filled from its table once, then kept up to date through
 * a table of the rows changed since (pendingTable, filled by triggers on every write to the table,
 * any process's): their tokens go in the index together, a little later (FLUSH_MS, or with a large
 * commit), and before any find through the index: each FTS5 commit writes a segment of its own and
 * the index's records of it, several pages of the log, which a record written alone would pay in full.
 * secure-delete: an erased record's tokens leave the index's pages at once (erase flushes them),
 * like its values leave the table's (secure_delete, see the store's erase).
 */
export class SqliteSubstringIndexes {
  /** By table name: the flush of its substring index to come. */
  private readonly flushes = new Map<string, NodeJS.Timeout>();
  private readonly selectTable;

  constructor(private readonly db: SqliteDatabase) {
    // The substring indexes are filled with it, in every process that commits, finds or erases.
    db.function(TOKENS_FUNCTION, { deterministic: true, varargs: true }, (accountId: unknown, ...values: unknown[]) =>
      substringTokens(String(accountId), values.map(String)),
    );
    this.selectTable = db.prepare<[string], 1>('SELECT 1 FROM sqlite_master WHERE name = ?');
  }

  /** Whether a table exists. */
  exists(name: string): boolean {
    return this.selectTable.get(name) !== undefined;
  }

  /**
   * Makes the generation's table its substring index, if its schema has substring filters and the
   * table none yet. Returns whether triggers were added to the table (statements prepared before
   * read it without them, and must be prepared again).
   */
  create(schema: CollectionSchema, generation: number): boolean {
    const fields = substringFields(schema);
    if (fields.length === 0) return false;
    const t = tableName(schema.name, generation);
    const s = substringsTable(t);
    if (this.exists(s)) return this.keepByFlush(schema, generation);
    // Filled with a larger in-memory hash than FTS5's default (hashsize, FILL_HASH_BYTES); set back
    // to the default after, for the small flushes that keep it up to date.
    this.db.exec(`
      CREATE VIRTUAL TABLE ${s} USING fts5(tokens, content='', contentless_delete=1, tokenize='ascii', detail='none');
      INSERT INTO ${s} (${s}, rank) VALUES ('secure-delete', 1);
      INSERT INTO ${s} (${s}, rank) VALUES ('hashsize', ${FILL_HASH_BYTES});
      INSERT INTO ${s} (rowid, tokens) SELECT seq, ${tokensOf(fields, t)} FROM ${t} WHERE deleted = 0 AND ${holdsSubstrings(fields, t)};
      INSERT INTO ${s} (${s}, rank) VALUES ('hashsize', ${FTS5_HASH_BYTES});
    `);
    return this.keepByFlush(schema, generation);
  }

  /**
   * The table of rows changed since the substring index was last brought up to date, and the
   * triggers that fill it (replacing those of a store that kept the index row by row, an earlier
   * version's): each row by its seq (the index's rowid), with the rowid of the table's row holding
   * its values now (none once deleted), and whether the index may hold tokens of it already (to
   * delete first). Returns whether it made them.
   */
  keepByFlush(schema: CollectionSchema, generation: number): boolean {
    const fields = substringFields(schema);
    const t = tableName(schema.name, generation);
    const s = substringsTable(t);
    const p = pendingTable(t);
    if (fields.length === 0 || !this.exists(s) || this.exists(p)) return false;
    const changed = fields.map((f) => `OLD.${filterColumn(f)} IS NOT NEW.${filterColumn(f)}`).join(' OR ');
    this.db.exec(`
      DROP TRIGGER IF EXISTS ${s}_insert;
      DROP TRIGGER IF EXISTS ${s}_update;
      DROP TRIGGER IF EXISTS ${s}_delete;
      CREATE TABLE ${p} (seq INTEGER PRIMARY KEY, row INTEGER, indexed INTEGER NOT NULL);
      CREATE TRIGGER ${s}_insert AFTER INSERT ON ${t} BEGIN
        INSERT INTO ${p} (seq, row, indexed) VALUES (NEW.seq, NEW.rowid, 0) ON CONFLICT (seq) DO UPDATE SET row = excluded.row;
      END;
      CREATE TRIGGER ${s}_update AFTER UPDATE ON ${t} WHEN OLD.deleted IS NOT NEW.deleted OR OLD.seq IS NOT NEW.seq OR ${changed} BEGIN
        INSERT INTO ${p} (seq, row, indexed) VALUES (OLD.seq, NULL, 1) ON CONFLICT (seq) DO NOTHING;
        INSERT INTO ${p} (seq, row, indexed) VALUES (NEW.seq, NEW.rowid, 0) ON CONFLICT (seq) DO UPDATE SET row = excluded.row;
      END;
      CREATE TRIGGER ${s}_delete AFTER DELETE ON ${t} BEGIN
        INSERT INTO ${p} (seq, row, indexed) VALUES (OLD.seq, NULL, 1) ON CONFLICT (seq) DO UPDATE SET row = NULL;
      END;
    `);
    return true;
  }

  /** The rows waiting for the index of table `t` (built with `schema`), and what takes them in; null where it has none. */
  pendingOf(schema: CollectionSchema, t: string): Pending | null {
    if (!this.exists(pendingTable(t))) return null;
    const fields = substringFields(schema);
    const s = substringsTable(t);
    const p = pendingTable(t);
    const waiting = this.db.prepare(`SELECT 1 FROM ${p} LIMIT 1`).pluck();
    const remove = this.db.prepare(`DELETE FROM ${s} WHERE rowid IN (SELECT seq FROM ${p} WHERE indexed = 1)`);
    const add = this.db.prepare(
      `INSERT INTO ${s} (rowid, tokens)
         SELECT ${t}.seq, ${tokensOf(fields, t)} FROM ${p} CROSS JOIN ${t} ON ${t}.rowid = ${p}.row WHERE ${t}.deleted = 0 AND ${holdsSubstrings(fields, t)}`,
    );
    const clear = this.db.prepare(`DELETE FROM ${p}`);
    const flush = this.db.transaction(() => {
      remove.run();
      add.run();
      clear.run();
    });
    const isWaiting = () => waiting.get() !== undefined;
    // Looked at before the transaction: with nothing waiting, no write lock is taken.
    return { waiting: isWaiting, flush: () => void (isWaiting() && flush.immediate()) };
  }

  /** The index of table `t`, if it has one. */
  indexOf(t: string): string | null {
    return this.exists(substringsTable(t)) ? substringsTable(t) : null;
  }

  /**
   * Takes in the rows waiting for the table's substring index, if it can at once (no waiting for
   * another process's lock): false when it could not.
   */
  flushAtOnce(pending: Pending): boolean {
    const busyTimeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      pending.flush();
      return true;
    } catch {
      return false;
    } finally {
      this.db.pragma(`busy_timeout = ${busyTimeout}`);
    }
  }

  /**
   * A flush of table `name`'s index in FLUSH_MS, unless one is due; again later should it not be done
   * at once. `current` gives its pending rows when the flush is due, null when it is no longer live.
   */
  flushSoon(name: string, current: () => Pending | null, ms = FLUSH_MS): void {
    if (this.flushes.has(name)) return;
    const timer = setTimeout(() => {
      this.flushes.delete(name);
      if (!this.db.open) return;
      try {
        const pending = current();
        if (pending?.waiting() && !this.flushAtOnce(pending)) this.flushSoon(name, current, RETRY_MS);
      } catch {
        // Gone meanwhile (dropped, closed): nothing waits for it.
      }
    }, ms);
    this.flushes.set(name, timer.unref());
  }

  /** The FTS5 query of a find's substring filters: the tokens of each (substrings.ts). */
  match(schema: CollectionSchema, query: FindQuery): string {
    return substringFields(schema)
      .flatMap((f, place) => (query.filters[f] ? [substringQuery(query.accountId, place, filterKey('contains-ci', query.filters[f]))] : []))
      .join(' ');
  }

  /** The SQL that drops table `t`'s index and its pending rows. */
  dropSql(t: string): string {
    return `DROP TABLE IF EXISTS ${substringsTable(t)}; DROP TABLE IF EXISTS ${pendingTable(t)};`;
  }

  /** Rows waiting for an index wait in the file: the next find or flush takes them. */
  close(): void {
    for (const timer of this.flushes.values()) clearTimeout(timer);
    this.flushes.clear();
  }
}
