import type { Statement } from 'better-sqlite3';
import { comparePositions, Position, START } from '../event-store/event-store.port';
import { checkpointAndTruncate, SqliteDatabase, TEXT_KEY, transactions } from '../storage/sqlite-database';
import { sqliteFailure } from '../storage/store-unavailable.error';
import {
  Checkpoint,
  CollectionSchema,
  CollectionStatus,
  COUNT_LIMIT,
  FindQuery,
  FindResult,
  GenerationReplacedError,
  GenerationStatus,
  MatchKind,
  ProjectionFailure,
  ReadDocument,
  ReadStore,
  RebuildBehindError,
} from './read-store.port';
import { RowidTable } from './rowid-table';
import { readsSubstrings, substringFields, substringQuery, substringTokens } from './substrings';

/** The columns a document is read from, id first: not the filter columns, which only queries use (fewer columns, cheaper rows). */
const DOCUMENT_COLUMNS = ['id', 'account_id', 'revision', 'seq', 'deleted', 'created', 'fields'];
const DOCUMENT = DOCUMENT_COLUMNS.join(', ');

interface DocumentRow {
  id: string;
  account_id: string;
  revision: number;
  seq: number;
  deleted: number;
  created: number;
  fields: string;
}

interface GenerationRow {
  generation: number;
  /** A dropped generation keeps its row, so generation numbers are never reused. */
  state: 'live' | 'building' | 'retired' | 'dropped';
  commit_pos: string | null;
  prepare_pos: string | null;
  failure: string | null;
  updated_at: number;
}

/** The prepared statements of one generation's table. */
interface Table {
  name: string;
  generation: number;
  /** Inserts, or overwrites with a newer revision, by id: needs the id index, so prepared on first use. */
  upsert(): Statement;
  /**
   * Overwrites with a newer revision only the columns no index reads, where every indexed one keeps
   * its value; no row changed otherwise. SQLite rewrites the entry of every index whose column an
   * UPDATE sets, same value or not: ten updates of the name dirtied 39 pages of the log in one
   * commit through the upsert, 10 through this. Takes the upsert's values; prepared on first use.
   */
  rewrite(values: unknown[]): boolean;
  /**
   * The document, with the generation live now (see readLive); no row when there is none.
   * Parameters by position (collection, id, account): binding by name cost a quarter of the statement.
   */
  selectOne: Statement<[string, string, string], LiveRow<DocumentRow>>;
  /** The account's oldest live document, with the generation live now, like selectOne. */
  selectOldest: Statement<[string, string], LiveRow<DocumentRow>>;
  /** Takes the ids as one JSON array, so one statement serves any number of them. */
  selectMany: Statement<[string], DocumentRow>;
  /** Prepared find statements by filter combination, order and limit, built on first use. */
  finds: Map<string, { bySubstrings: boolean; page: Statement; count: Statement }>;
  /** Its substring index (see substringsTable), or null where it has none (a generation being built, or retired before it had one). */
  substrings: string | null;
  /** The substring index kept through rows waiting for it (see createSubstrings): whether any wait, and what takes them in; null where there is no index. */
  pending: Pending | null;
}

interface Pending {
  waiting(): boolean;
  /** In a transaction of its own, or within the one under way. */
  flush(): void;
}

/** A row read together with the generation live when it was read. */
type LiveRow<T> = T & { live_generation: number | null };

interface Collection {
  schema: CollectionSchema;
  tables: Map<number, Table>;
}

/**
 * A generation this store is building. Its table has no index until the promotion, not even on id:
 * keeping a random-key index up to date row by row is most of a large rebuild's cost. Rows are found
 * by rowid instead, through `rowids`, a table outside the JavaScript heap (rowid-table.ts). Past
 * `rowidsInMemory` documents the id index is built once, the table let go (null), and the rest of
 * the rebuild writes through the index like a live generation: memory stays bounded whatever the
 * store holds.
 */
interface Build {
  rowids: RowidTable | null;
  /** Set once the rowid table was let go after a failed commit: the next commit builds the id index first. */
  needsIdIndex?: boolean;
  /**
   * The rowid the next new row gets: given by this store, not by SQLite, so new rows go in
   * INSERT_ROWS at a time, one statement each, rather than one (and one call into SQLite) per row.
   * Only this process writes the table while it builds it (see commitBatch).
   */
  nextRowid: number;
  /** Inserts INSERT_ROWS rows, each its rowid and then every column. */
  insertMany: Statement;
  /** Inserts one row: its rowid and then every column. */
  insert: Statement;
  /** Every column but id, then the rowid and the revision it must be newer than. */
  update: Statement;
  selectByRowids: Statement<[string], DocumentRow>;
}

const NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Documents a rebuild finds through its rowid table (about 50 bytes each: at most about 100 MB) before
 * it builds the id index instead (see Build), unless told otherwise (REBUILD_ROWIDS).
 */
const ROWIDS_IN_MEMORY = 2_000_000;

/** Rows a build inserts with one statement (see Build.nextRowid); 11 parameters each for customers. */
const INSERT_ROWS = 64;

/** SQLite's sorter threads for a promotion's indexes (`PRAGMA threads`): the helper threads beside the connection's own. */
const SORT_THREADS = 2;

/**
 * FTS5's in-memory hash of pending tokens while a substring index is filled from its table, and
 * FTS5's default, set back after. A larger hash fills it no faster (docs/benchmarks.md), and holds
 * more memory at the promotion.
 */
const FILL_HASH_BYTES = 8 * 1024 * 1024;
const FTS5_HASH_BYTES = 1024 * 1024;

/**
 * How long rows changed by a commit may wait before their tokens go in the substring index (see
 * createSubstrings): a find through the index brings it up to date first, so no read waits on this.
 */
const SUBSTRINGS_FLUSH_MS = 100;
/** Documents in one commit from which their tokens go in the index with the commit itself. */
const SUBSTRINGS_FLUSH_AT = 100;
/** How long a flush that could not be done at once (another process writing, a full disk) waits to try again. */
const SUBSTRINGS_RETRY_MS = 1000;

/**
 * WAL pages (about 40 MB) a rebuilding connection lets accumulate before checkpointing, where it
 * would checkpoint sooner: a connection of the read models' own (the events in EventStoreDB), whose
 * default is 1,000. The event store's durable connection, which they share on SQLite, already waits longer.
 */
const REBUILD_WAL_CHECKPOINT_PAGES = 10_000;

/** The column a filter reads: values of case-insensitive filters are stored lowercased. */
const filterColumn = (field: string) => `f_${field}`;
const filterKey = (kind: MatchKind, value: string) => (kind === 'exact' ? value : value.toLowerCase());
/** `__` is kept out of collection names, so generation tables cannot collide with a collection. */
const tableName = (collection: string, generation: number) => `${collection}__g${generation}`;

/**
 * Read store on the embedded SQLite file: a table per collection generation with one indexed column
 * per filter, partial indexes over live rows in creation order, and the generations (state,
 * checkpoint, failure) in their own table. Every read looks up the live generation, so a promotion
 * made by another process (the CLI's rebuild) is seen by the next read.
 */
export class SqliteReadStore implements ReadStore {
  private readonly collections = new Map<string, Collection>();
  private readonly transaction: ReturnType<typeof transactions>;
  /** By table name. */
  private readonly builds = new Map<string, Build>();
  /** The connection's own wal_autocheckpoint, given back once no build is left (see startRebuild). */
  private checkpointPagesBefore = 0;
  /** The generation of each collection live at its last read: where the next read looks first. */
  private readonly lastLive = new Map<string, number>();
  /** By table name: the flush of its substring index to come (see createSubstrings). */
  private readonly substringFlushes = new Map<string, NodeJS.Timeout>();
  private readonly selectGenerations: Statement<[string], GenerationRow>;
  private readonly selectGeneration: Statement<[string, number], GenerationRow>;
  private readonly selectLive: Statement<[string], number>;
  /** Whether a table (a substring index, say) exists: `exists(name)`. */
  private readonly exists: (name: string) => boolean;
  private readonly selectState: Statement<[string, number], string>;
  private readonly saveCheckpoint: Statement;
  private readonly saveFailure: Statement;
  private readonly setState: Statement;
  private readonly insertGeneration: Statement;
  private readonly takeLease: Statement;
  private readonly dropLease: Statement;
  private readonly selectLeaseHolder: Statement<[string], string>;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly rowidsInMemory = ROWIDS_IN_MEMORY,
  ) {
    this.transaction = transactions(db);
    // The substring indexes are filled with it (see createSubstrings), in every process that commits, finds or erases.
    db.function(TOKENS_FUNCTION, { deterministic: true, varargs: true }, (accountId: unknown, ...values: unknown[]) =>
      substringTokens(String(accountId), values.map(String)),
    );
    db.exec(`
      CREATE TABLE IF NOT EXISTS read_model_generations (
        collection  TEXT    NOT NULL,
        generation  INTEGER NOT NULL,
        state       TEXT    NOT NULL CHECK (state IN ('live', 'building', 'retired', 'dropped')),
        commit_pos  TEXT,
        prepare_pos TEXT,
        failure     TEXT,
        updated_at  INTEGER NOT NULL,
        PRIMARY KEY (collection, generation)
      );
      CREATE TABLE IF NOT EXISTS read_model_leases (
        name       TEXT    PRIMARY KEY,
        holder     TEXT    NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `);
    this.selectGenerations = db.prepare(`SELECT * FROM read_model_generations WHERE collection = ${TEXT_KEY} ORDER BY generation`);
    this.selectGeneration = db.prepare('SELECT * FROM read_model_generations WHERE collection = ? AND generation = ?');
    const selectTable = db.prepare<[string], 1>('SELECT 1 FROM sqlite_master WHERE name = ?');
    this.exists = (name) => selectTable.get(name) !== undefined;
    this.selectLive = db.prepare<[string], number>("SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'").pluck();
    this.selectState = db.prepare<[string, number], string>('SELECT state FROM read_model_generations WHERE collection = ? AND generation = ?').pluck();
    this.saveCheckpoint = db.prepare(
      `UPDATE read_model_generations SET commit_pos = ?, prepare_pos = ?, failure = NULL, updated_at = ?
       WHERE collection = ? AND generation = ?`,
    );
    this.saveFailure = db.prepare('UPDATE read_model_generations SET failure = ?, updated_at = ? WHERE collection = ? AND generation = ?');
    this.setState = db.prepare('UPDATE read_model_generations SET state = ?, updated_at = ? WHERE collection = ? AND generation = ?');
    this.insertGeneration = db.prepare('INSERT INTO read_model_generations (collection, generation, state, updated_at) VALUES (?, ?, ?, ?)');
    // One statement, so taking a lease and checking it is free cannot interleave with another process.
    this.takeLease = db.prepare(
      `INSERT INTO read_model_leases (name, holder, expires_at) VALUES (@name, @holder, @expires)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE read_model_leases.holder IN (excluded.holder, @replacing) OR read_model_leases.expires_at <= @now`,
    );
    this.selectLeaseHolder = db.prepare<[string], string>('SELECT holder FROM read_model_leases WHERE name = ?').pluck();
    this.dropLease = db.prepare('DELETE FROM read_model_leases WHERE name = ? AND holder = ?');
  }

  async ensureCollection(schema: CollectionSchema): Promise<void> {
    const names = [schema.name, ...Object.keys(schema.filters)];
    for (const name of names) {
      if (!NAME.test(name) || name.includes('__')) throw new Error(`Invalid collection or field name: ${name}`);
    }
    this.collections.set(schema.name, { schema, tables: new Map() });
    this.transaction.immediate(() => {
      // A store made before the substring index gets one on its live generation, once; an index
      // kept record by record (an earlier version's) is kept through the rows waiting from now
      // on (see createSubstrings): the live one's, and a retired one's, still read for a while.
      const generations = this.selectGenerations.all(schema.name);
      if (generations.length > 0) {
        for (const g of generations) if (g.state === 'retired') this.keepSubstringsByFlush(schema, g.generation);
        return this.createSubstrings(schema, this.liveGeneration(schema.name));
      }
      this.insertGeneration.run(schema.name, 1, 'live', Date.now());
      this.createTable(schema, 1, { indexed: true });
    });
  }

  async getMany(collection: string, ids: string[], generation?: number): Promise<Map<string, ReadDocument>> {
    const found = new Map<string, ReadDocument>();
    if (ids.length === 0) return found;
    if (generation !== undefined) this.assertWritable(collection, generation);
    const table = this.table(collection, generation ?? this.liveGeneration(collection));
    const build = this.builds.get(table.name);
    const rowids = build?.rowids;
    const rows =
      build && rowids
        ? build.selectByRowids.all(JSON.stringify(ids.map((id) => rowids.get(id)).filter((rowid) => rowid !== undefined)))
        : table.selectMany.all(JSON.stringify(ids));
    for (const row of rows) found.set(row.id, toDocument(row));
    return found;
  }

  async get(collection: string, accountId: string, id: string): Promise<ReadDocument | null> {
    const { row } = this.readLive(collection, (table) => this.withLive(collection, table.selectOne.get(collection, id, accountId)));
    return row ? toDocument(row) : null;
  }

  async oldest(collection: string, accountId: string): Promise<ReadDocument | null> {
    const { row } = this.readLive(collection, (table) => this.withLive(collection, table.selectOldest.get(collection, accountId)));
    return row ? toDocument(row) : null;
  }

  async find(collection: string, query: FindQuery): Promise<FindResult> {
    const { schema } = this.collection(collection);
    const fields = Object.keys(query.filters).sort();
    // The limit is part of the statement, not a parameter: better-sqlite3 builds SQLite with STAT4,
    // and a bound LIMIT makes it plan the statement again on every run (twice the cost of the page).
    if (!Number.isSafeInteger(query.limit) || query.limit < 0) throw new Error(`A list's limit must be a whole number, not ${query.limit}`);
    const key = `${fields.join(',')}|${query.order}|${query.limit}|${query.after === undefined ? '' : 'after'}`;
    const params = [query.accountId, ...fields.map((f) => filterKey(schema.filters[f], query.filters[f]))];
    const { documents, total } = this.readLive(collection, (table) => {
      const read = (byIndex: boolean) => {
        const statements = this.findStatements(table, collection, fields, key, query, byIndex);
        if (statements.bySubstrings && table.pending?.waiting()) return undefined;
        // Through the substring index, its query comes first: the account's records holding every piece.
        const match = statements.bySubstrings ? [this.substringsMatch(schema, query)] : [];
        const { live_generation: live, total } =
          query.count === false
            ? { live_generation: this.selectLive.get(collection) ?? null, total: 0 }
            : (statements.count.get(collection, ...match, ...params) as LiveRow<{ total: number }>);
        if (live !== table.generation) return { live, documents: [], total };
        const rows = statements.page.all(...match, ...params, ...(query.after === undefined ? [] : [query.after]), query.offset) as DocumentRow[];
        return { live, documents: rows.map(toDocument), total };
      };
      if (!table.pending || !readsSubstrings(schema, fields)) return read(true)!;
      // Through the substring index only where no changed row waits for it, in the snapshot the
      // count and the page read (one transaction): else the rows are taken in first, and should that
      // not be possible at once (another process writing, a full disk), the account's rows are
      // checked one by one instead, which needs no index and no lock.
      const inOneSnapshot = (byIndex: boolean) => this.transaction.deferred(() => read(byIndex));
      let found = inOneSnapshot(true);
      if (found === undefined && this.flushAtOnce(table.pending)) found = inOneSnapshot(true);
      return found ?? inOneSnapshot(false)!;
    });
    return { documents, total: Math.min(total, COUNT_LIMIT), capped: total > COUNT_LIMIT };
  }

  /** The FTS5 query of a find's substring filters: the tokens of each (substrings.ts). */
  private substringsMatch(schema: CollectionSchema, query: FindQuery): string {
    return substringFields(schema)
      .flatMap((f, place) => (query.filters[f] ? [substringQuery(query.accountId, place, filterKey('contains-ci', query.filters[f]))] : []))
      .join(' ');
  }

  /**
   * The page and count statements of a filter combination on one table, prepared on first use.
   * Every shape costs what its page and COUNT_LIMIT cost, not what the account holds: the count
   * stops past COUNT_LIMIT; the page starts past `after` by an index and skips at most
   * MAX_LIST_OFFSET; an exact filter reads its index; substring filters alone read the substring
   * index in creation order (its rowid is the record's seq), each candidate checked with instr.
   */
  private findStatements(table: Table, collection: string, fields: string[], key: string, { order, limit, after }: FindQuery, byIndex = true) {
    const { schema } = this.collection(collection);
    key = byIndex ? key : `${key}|no index`;
    let statements = table.finds.get(key);
    if (!statements) {
      const where = [`account_id = ${TEXT_KEY}`, 'deleted = 0'];
      for (const f of fields) {
        const kind = schema.filters[f];
        if (!kind) throw new Error(`Collection ${collection} has no filter ${f}`);
        where.push(kind === 'contains-ci' ? `instr(${filterColumn(f)}, ?) > 0` : `${filterColumn(f)} = ${TEXT_KEY}`);
      }
      const bySubstrings = byIndex && table.substrings !== null && readsSubstrings(schema, fields);
      const s = table.substrings;
      const sorted = bySubstrings ? `${s}.rowid` : 'seq';
      const past = after === undefined ? '' : ` AND ${sorted} ${order === 'newest' ? '<' : '>'} ?`;
      const from = bySubstrings
        ? `${s} JOIN ${table.name} ON seq = ${s}.rowid WHERE ${s} MATCH ? AND ${where.join(' AND ')}`
        : `${table.name} WHERE ${where.join(' AND ')}`;
      statements = {
        bySubstrings,
        page: this.db.prepare(`SELECT ${DOCUMENT} FROM ${from}${past} ORDER BY ${sorted} ${order === 'newest' ? 'DESC' : 'ASC'} LIMIT ${limit} OFFSET ?`),
        count: this.db.prepare(
          `SELECT (${LIVE_GENERATION}) AS live_generation, (SELECT count(*) FROM (SELECT 1 FROM ${from} LIMIT ${COUNT_LIMIT + 1})) AS total`,
        ),
      };
      table.finds.set(key, statements);
    }
    return statements;
  }

  /** A row read with the generation live then; no row, no generation with it: a miss (a 404) looks the live one up on its own. */
  private withLive<T>(collection: string, found: LiveRow<T> | undefined): { live: number | null; row: LiveRow<T> | undefined } {
    return { live: found ? found.live_generation : (this.selectLive.get(collection) ?? null), row: found };
  }

  /**
   * Runs `read` on the live generation's table. Each read's statement also returns the generation
   * live at that moment, so the usual read is one statement, not a lookup of the live generation and
   * then the read; when a promotion (by this process or another) has made another generation live
   * since the last read, the read runs again there.
   */
  private readLive<R extends { live: number | null }>(collection: string, read: (table: Table) => R): R {
    let generation = this.lastLive.get(collection) ?? this.liveGeneration(collection);
    for (let attempt = 1; ; attempt++) {
      let result: R;
      try {
        result = read(this.table(collection, generation));
      } catch (error) {
        // The generation last read was retired and dropped since: look the live one up.
        if (attempt > 1 || !/no such table/.test((error as Error).message)) throw error;
        generation = this.liveGeneration(collection);
        continue;
      }
      if (result.live === null) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
      if (result.live === generation || attempt === 3) {
        this.lastLive.set(collection, generation);
        return result;
      }
      generation = result.live;
      // Promoted since: its statements, if this process prepared any while it was built, are prepared again (its substring index is new).
      this.collection(collection).tables.delete(generation);
    }
  }

  async commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint): Promise<void> {
    const build = this.builds.get(tableName(collection, checkpoint.generation));
    const rowids = build?.rowids;
    try {
      await this.commitBatch(collection, documents, checkpoint);
    } catch (error) {
      // A build's batch rolled back: its rowid table names rows never written, whose rowids the next
      // batch would give others. It is let go; the rest of the build finds rows by the id index.
      if (build && rowids && build.rowids === rowids) {
        build.rowids = null;
        build.needsIdIndex = true;
      }
      throw sqliteFailure(error);
    }
  }

  private async commitBatch(collection: string, documents: ReadDocument[], checkpoint: Checkpoint): Promise<void> {
    const { schema } = this.collection(collection);
    const { generation, position } = checkpoint;
    const filterFields = Object.keys(schema.filters);
    const name = tableName(collection, generation);
    const build = this.builds.get(name);
    // Rows of this batch get rowids from here on, and go in the rowid table as they are inserted
    // (should the transaction fail, commit lets the table go).
    const first = build?.nextRowid ?? 0;
    let nextRowid = first;
    this.transaction.immediate(() => {
      const state = this.assertWritable(collection, generation);
      const table = this.table(collection, generation);
      if (state === 'building' && !build) {
        throw new Error(`Generation ${generation} of ${collection} is being built by another process`);
      }
      if (build?.needsIdIndex) {
        this.db.exec(idIndex(name));
        build.needsIdIndex = false;
      }
      const kinds = filterFields.map((f) => schema.filters[f]);
      // A document's values, in the table's column order; `at` it in `into`, from `from`. Returns where it ended.
      const valuesOf = (d: ReadDocument, into: unknown[], from: number) => {
        let at = from;
        into[at++] = d.id;
        into[at++] = d.accountId;
        into[at++] = d.revision;
        into[at++] = d.seq;
        into[at++] = d.deleted ? 1 : 0;
        into[at++] = d.created;
        into[at++] = JSON.stringify(d.fields);
        for (let f = 0; f < filterFields.length; f++) into[at++] = filterKey(kinds[f], d.fields[filterFields[f]] ?? '');
        return at;
      };
      // New rows of a build, waiting to go in INSERT_ROWS at a time: each its rowid, then its values.
      const perRow = 1 + DOCUMENT_COLUMNS.length + filterFields.length;
      const waiting: unknown[] = build?.rowids ? new Array(INSERT_ROWS * perRow) : [];
      let filled = 0;
      const insertWaiting = () => {
        if (filled === waiting.length) build!.insertMany.run(waiting);
        else for (let at = 0; at < filled; at += perRow) build!.insert.run(waiting.slice(at, at + perRow));
        filled = 0;
      };
      for (const d of documents) {
        if (!build?.rowids) {
          const values: unknown[] = new Array(perRow - 1);
          valuesOf(d, values, 0);
          // A new record (revision 0) has no row to rewrite.
          if (d.revision === 0 || !table.rewrite(values)) table.upsert().run(...values);
          continue;
        }
        const rowid = build.rowids.add(d.id, nextRowid);
        if (rowid === undefined) {
          waiting[filled] = nextRowid++;
          filled = valuesOf(d, waiting, filled + 1);
          if (filled === waiting.length) insertWaiting();
        } else {
          // Its row may be among those waiting (a document given twice).
          if (rowid >= first) insertWaiting();
          const values: unknown[] = new Array(perRow - 1);
          valuesOf(d, values, 0);
          build.update.run(...values.slice(1), rowid, d.revision);
        }
      }
      if (filled > 0) insertWaiting();
      // A large batch's tokens go in the substring index with it, a small one's a little later.
      if (documents.length >= SUBSTRINGS_FLUSH_AT) table.pending?.flush();
      // The checkpoint only moves forward, whatever order writers (other processes too) arrive in.
      const saved = positionOf(this.selectGeneration.get(collection, generation)!);
      const next = saved && comparePositions(position, saved) <= 0 ? saved : position;
      this.saveCheckpoint.run(next.commit.toString(), next.prepare.toString(), Date.now(), collection, generation);
    });
    if (documents.length > 0 && documents.length < SUBSTRINGS_FLUSH_AT) this.flushSubstringsSoon(collection, generation);
    if (!build?.rowids) return;
    build.nextRowid = nextRowid;
    if (build.rowids.size > this.rowidsInMemory) {
      this.db.exec(idIndex(name));
      build.rowids = null;
    }
  }

  async recordFailure(collection: string, generation: number, failure: ProjectionFailure): Promise<void> {
    this.saveFailure.run(JSON.stringify(failure), Date.now(), collection, generation);
  }

  async status(collection: string): Promise<CollectionStatus> {
    const rows = this.selectGenerations.all(collection);
    const live = rows.find((r) => r.state === 'live');
    if (!live) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    const building = rows.find((r) => r.state === 'building');
    return { live: toStatus(live), building: building ? toStatus(building) : null };
  }

  async startRebuild(collection: string): Promise<number> {
    const { schema } = this.collection(collection);
    const generation = this.transaction.immediate(() => {
      const rows = this.selectGenerations.all(collection);
      for (const row of rows.filter((r) => r.state === 'building')) this.dropGeneration(collection, row.generation);
      const next = Math.max(0, ...rows.map((r) => r.generation)) + 1;
      this.insertGeneration.run(collection, next, 'building', Date.now());
      this.createTable(schema, next, { indexed: false });
      return next;
    });
    this.builds.set(tableName(collection, generation), this.prepareBuild(schema, generation));
    // This connection now fills a table in large batches: checkpoint the WAL less often, since each
    // checkpoint syncs and copies back pages the next batches dirty again. Commits stay atomic and
    // checkpoints synced (synchronous is unchanged), so a crash still leaves the live model intact.
    if (this.builds.size === 1) this.checkpointPagesBefore = this.db.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.pragma(`wal_autocheckpoint = ${Math.max(REBUILD_WAL_CHECKPOINT_PAGES, this.checkpointPagesBefore)}`);
    return generation;
  }

  async promote(collection: string, generation: number): Promise<void> {
    const { schema } = this.collection(collection);
    // Built before the swap, in a transaction of its own so a refused promotion keeps them.
    this.transaction.immediate(() => {
      if (this.selectState.get(collection, generation) === 'building') this.createIndexes(schema, generation);
    });
    this.transaction.immediate(() => {
      const rows = this.selectGenerations.all(collection);
      const building = rows.find((r) => r.generation === generation && r.state === 'building');
      if (!building) throw new GenerationReplacedError(collection, generation);
      const live = rows.find((r) => r.state === 'live')!;
      if (comparePositions(positionOf(building) ?? START, positionOf(live) ?? START) < 0) {
        throw new RebuildBehindError(collection);
      }
      const now = Date.now();
      this.setState.run('retired', now, collection, live.generation);
      this.setState.run('live', now, collection, generation);
    });
    // Indexed and live now: written like any live generation from here on.
    this.endBuild(tableName(collection, generation));
    if (this.builds.size === 0) await this.truncateLog();
  }

  async abandonRebuild(collection: string, generation: number): Promise<void> {
    try {
      this.transaction.immediate(() => {
        if (this.selectState.get(collection, generation) === 'building') this.dropGeneration(collection, generation);
      });
    } finally {
      // Over for this process even when the drop failed (the next rebuild drops it) or another process had dropped it.
      this.endBuild(tableName(collection, generation));
    }
  }

  async erase(collection: string, ids: string[]): Promise<void> {
    const { schema } = this.collection(collection);
    try {
      this.transaction.immediate(() => {
        for (const row of this.selectGenerations.all(collection)) {
          if (row.state === 'dropped') continue;
          const t = tableName(collection, row.generation);
          // Every filter column the table has, not only the schema's: a generation made by an
          // earlier version may keep a filter since dropped from it, until a rebuild replaces it.
          const blanks = this.db
            .prepare<[string], { name: string }>(`SELECT name FROM pragma_table_info(?) WHERE name GLOB '${filterColumn('*')}'`)
            .all(t)
            .map(({ name }) => `, ${name} = ''`)
            .join('');
          const scrub = this.db.prepare(`UPDATE ${t} SET fields = '{}', deleted = 1${blanks} WHERE id = ?`);
          for (const id of ids) scrub.run(id);
          // The erased records' tokens leave the substring index now, not at the next flush (the
          // table looked at afresh: another process may have promoted it since this one read it).
          if (row.state !== 'building' && this.exists(pendingTable(t))) this.pendingOf(schema, t).flush();
        }
      });
      await checkpointAndTruncate(this.db);
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async dropRetired(collection: string, graceMs: number): Promise<void> {
    const before = Date.now() - graceMs;
    const dropped = this.transaction.immediate(() => {
      let count = 0;
      for (const row of this.selectGenerations.all(collection)) {
        if (row.state === 'retired' && row.updated_at <= before) {
          this.dropGeneration(collection, row.generation);
          count++;
        }
      }
      return count;
    });
    // A dropped table's pages are zeroed (secure_delete) through the log: as many as the table held.
    if (dropped > 0 && this.builds.size === 0) await this.truncateLog();
  }

  /**
   * After a rebuild's large writes (the promotion's indexes, a replaced generation zeroed as it is
   * dropped), the write-ahead log is as large as the largest of them, hundreds of MB for a million
   * documents, and SQLite reuses the file without shrinking it: it is checkpointed and truncated
   * here. Best effort: should readers keep it from finishing, the log stays as it is, and the
   * promotion or drop still stands.
   */
  private async truncateLog(): Promise<void> {
    await checkpointAndTruncate(this.db).catch(() => undefined);
  }

  async acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    const now = Date.now();
    const taken = this.takeLease.run({ name, holder, expires: now + ttlMs, now, replacing: replacing ?? null }).changes === 1;
    return taken ? holder : (this.selectLeaseHolder.get(name) ?? '');
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.dropLease.run(name, holder);
  }

  /** Closes the connection this store was given. Rows waiting for the substring index wait in the file: the next find or flush takes them. */
  async close(): Promise<void> {
    for (const timer of this.substringFlushes.values()) clearTimeout(timer);
    this.substringFlushes.clear();
    this.db.close();
  }

  /**
   * A generation's table, with its indexes unless told otherwise: a rebuild fills its table without
   * them (see Build) and builds them once before the promotion, which is much cheaper than keeping
   * them up to date row by row.
   */
  private createTable(schema: CollectionSchema, generation: number, { indexed }: { indexed: boolean }): void {
    const t = tableName(schema.name, generation);
    const columns = Object.keys(schema.filters)
      .map((f) => `, ${filterColumn(f)} TEXT NOT NULL`)
      .join('');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS ${t} (
        id         TEXT    NOT NULL,
        account_id TEXT    NOT NULL,
        revision   INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        deleted    INTEGER NOT NULL,
        created    INTEGER NOT NULL,
        fields     TEXT    NOT NULL${columns}
      );
    `);
    if (indexed) this.createIndexes(schema, generation);
  }

  private createIndexes(schema: CollectionSchema, generation: number): void {
    const t = tableName(schema.name, generation);
    const exactIndexes = indexedFilters(schema)
      .map((f) => `CREATE INDEX IF NOT EXISTS ${t}_by_${f} ON ${t} (account_id, ${filterColumn(f)}, seq) WHERE deleted = 0;`)
      .join('\n');
    // The sorts of a filled table's indexes (a rebuild's promotion) in SQLite's helper threads too:
    // nothing else runs beside a promotion, so a second core would idle. Same indexes, built faster.
    const threads = this.db.pragma('threads', { simple: true }) as number;
    this.db.pragma(`threads = ${SORT_THREADS}`);
    try {
      this.db.exec(`
        ${idIndex(t)}
        CREATE INDEX IF NOT EXISTS ${t}_by_account ON ${t} (account_id, seq) WHERE deleted = 0;
        ${exactIndexes}
      `);
    } finally {
      this.db.pragma(`threads = ${threads}`);
    }
    this.createSubstrings(schema, generation);
  }

  /**
   * The substring index of a generation's table, if its collection has substring filters and the
   * table none yet: an FTS5 table of the live records' tokens (substrings.ts) by seq, filled from the
   * table once, then kept up to date through a table of the rows changed since (pendingTable, filled
   * by triggers on every write to the table, any process's): their tokens go in the index together,
   * a little later (SUBSTRINGS_FLUSH_MS, or with a large commit), and before any find through the
   * index: each FTS5 commit writes a segment of its own and the index's records of it, several
   * pages of the log, which a record written alone would pay in full.
   * secure-delete: an erased record's tokens leave the index's pages at once (erase flushes them),
   * like its values leave the table's (secure_delete, see erase).
   */
  private createSubstrings(schema: CollectionSchema, generation: number): void {
    const fields = substringFields(schema);
    if (fields.length === 0) return;
    const t = tableName(schema.name, generation);
    const s = substringsTable(t);
    if (this.exists(s)) return this.keepSubstringsByFlush(schema, generation);
    // Filled with a larger in-memory hash than FTS5's default (hashsize, FILL_HASH_BYTES); set back
    // to the default after, for the small flushes that keep it up to date.
    this.db.exec(`
      CREATE VIRTUAL TABLE ${s} USING fts5(tokens, content='', contentless_delete=1, tokenize='ascii', detail='none');
      INSERT INTO ${s} (${s}, rank) VALUES ('secure-delete', 1);
      INSERT INTO ${s} (${s}, rank) VALUES ('hashsize', ${FILL_HASH_BYTES});
      INSERT INTO ${s} (rowid, tokens) SELECT seq, ${tokensOf(fields, t)} FROM ${t} WHERE deleted = 0 AND ${holdsSubstrings(fields, t)};
      INSERT INTO ${s} (${s}, rank) VALUES ('hashsize', ${FTS5_HASH_BYTES});
    `);
    this.keepSubstringsByFlush(schema, generation);
  }

  /**
   * The table of rows changed since the substring index was last brought up to date, and the
   * triggers that fill it (replacing those of a store that kept the index row by row): each row by
   * its seq (the index's rowid), with the rowid of the table's row holding its values now (none once
   * deleted), and whether the index may hold tokens of it already (to delete first).
   */
  private keepSubstringsByFlush(schema: CollectionSchema, generation: number): void {
    const fields = substringFields(schema);
    const t = tableName(schema.name, generation);
    const s = substringsTable(t);
    const p = pendingTable(t);
    if (fields.length === 0 || !this.exists(s) || this.exists(p)) return;
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
    // Statements prepared before it read the table without it.
    this.collections.get(schema.name)?.tables.delete(generation);
  }

  /**
   * Takes in the rows waiting for the table's substring index, if it can at once (no waiting for
   * another process's lock): false when it could not.
   */
  private flushAtOnce(pending: Pending): boolean {
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

  /** A flush of the live generation's substring index in SUBSTRINGS_FLUSH_MS, unless one is due; again later should it not be done at once. */
  private flushSubstringsSoon(collection: string, generation: number, ms = SUBSTRINGS_FLUSH_MS): void {
    const name = tableName(collection, generation);
    if (this.substringFlushes.has(name) || !this.table(collection, generation).pending) return;
    const timer = setTimeout(() => {
      this.substringFlushes.delete(name);
      if (!this.db.open) return;
      try {
        if (this.selectState.get(collection, generation) !== 'live') return;
        const { pending } = this.table(collection, generation);
        if (pending?.waiting() && !this.flushAtOnce(pending)) this.flushSubstringsSoon(collection, generation, SUBSTRINGS_RETRY_MS);
      } catch {
        // Gone meanwhile (dropped, closed): nothing waits for it.
      }
    }, ms);
    this.substringFlushes.set(name, timer.unref());
  }

  /** A build promoted, replaced or dropped: once none is left, the connection (the event store's too, in the service) checkpoints as usual again. */
  private endBuild(name: string): void {
    if (this.builds.delete(name) && this.builds.size === 0) this.db.pragma(`wal_autocheckpoint = ${this.checkpointPagesBefore}`);
  }

  private dropGeneration(collection: string, generation: number): void {
    this.collections.get(collection)?.tables.delete(generation);
    this.endBuild(tableName(collection, generation));
    const t = tableName(collection, generation);
    this.db.exec(`DROP TABLE IF EXISTS ${t}; DROP TABLE IF EXISTS ${substringsTable(t)}; DROP TABLE IF EXISTS ${pendingTable(t)}`);
    this.setState.run('dropped', Date.now(), collection, generation);
  }

  private assertWritable(collection: string, generation: number): 'live' | 'building' {
    const state = this.selectState.get(collection, generation);
    if (state !== 'live' && state !== 'building') {
      // Another process replaced or dropped it: this process's build of it, if any, is over.
      this.endBuild(tableName(collection, generation));
      throw new GenerationReplacedError(collection, generation);
    }
    return state;
  }

  private liveGeneration(collection: string): number {
    const generation = this.selectLive.get(collection);
    if (generation === undefined) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    return generation;
  }

  private collection(name: string): Collection {
    const c = this.collections.get(name);
    if (!c) throw new Error(`Unknown collection ${name}: call ensureCollection first`);
    return c;
  }

  private prepareBuild(schema: CollectionSchema, generation: number): Build {
    const name = tableName(schema.name, generation);
    const columns = allColumns(schema);
    const row = `(${['rowid', ...columns].map(() => '?').join(', ')})`;
    const insert = (rows: number) => this.db.prepare(`INSERT INTO ${name} (rowid, ${columns.join(', ')}) VALUES ${Array(rows).fill(row).join(', ')}`);
    return {
      rowids: new RowidTable(),
      // The table was just made (startRebuild), so 1; asked of it all the same.
      nextRowid: this.db.prepare(`SELECT coalesce(max(rowid), 0) + 1 FROM ${name}`).pluck().get() as number,
      insertMany: insert(INSERT_ROWS),
      insert: insert(1),
      update: this.db.prepare(
        `UPDATE ${name} SET ${columns
          .slice(1)
          .map((col) => `${col} = ?`)
          .join(', ')} WHERE rowid = ? AND revision < ?`,
      ),
      selectByRowids: this.db.prepare(`SELECT ${DOCUMENT} FROM ${name} WHERE rowid IN (SELECT value FROM json_each(?))`),
    };
  }

  /** The rows waiting for a table's substring index (see keepSubstringsByFlush), and what takes them in. */
  private pendingOf(schema: CollectionSchema, t: string): Pending {
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

  /** The statements of one generation's table, prepared on first use (another process may have made it). */
  private table(collection: string, generation: number): Table {
    const c = this.collection(collection);
    let table = c.tables.get(generation);
    if (table) return table;
    const name = tableName(collection, generation);
    const columns = allColumns(c.schema);
    let upsert: Statement | undefined;
    let rewrite: Statement | undefined;
    // Where each of the rewrite's parameters is among the upsert's values (see columnsByIndexing).
    const { plain, indexed } = columnsByIndexing(c.schema);
    const at = (col: string) => columns.indexOf(col);
    const rewriteParams = [...plain.map(at), at('id'), at('revision'), ...indexed.map(at)];
    table = {
      name,
      generation,
      upsert: () =>
        (upsert ??= this.db.prepare(
          `INSERT INTO ${name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
           ON CONFLICT (id) DO UPDATE SET ${columns
             .slice(1)
             .map((col) => `${col} = excluded.${col}`)
             .join(', ')}
           WHERE excluded.revision > ${name}.revision`,
        )),
      rewrite: (values) =>
        (rewrite ??= this.db.prepare(
          `UPDATE ${name} SET ${plain.map((col) => `${col} = ?`).join(', ')}
           WHERE id = ? AND revision < ? AND ${indexed.map((col) => `${col} = ?`).join(' AND ')}`,
        )).run(...rewriteParams.map((i) => values[i])).changes === 1,
      // The live generation as a subquery, not a join: SQLite 3.54 runs the join form several times slower.
      selectOne: this.db.prepare(`SELECT (${LIVE_GENERATION}) AS live_generation, ${DOCUMENT} FROM ${name} WHERE id = ? AND account_id = ? AND deleted = 0`),
      selectOldest: this.db.prepare(
        `SELECT (${LIVE_GENERATION}) AS live_generation, ${DOCUMENT} FROM ${name} WHERE account_id = ${TEXT_KEY} AND deleted = 0 ORDER BY seq LIMIT 1`,
      ),
      selectMany: this.db.prepare<[string], DocumentRow>(`SELECT ${DOCUMENT} FROM ${name} WHERE id IN (SELECT value FROM json_each(?))`),
      finds: new Map(),
      substrings: this.exists(substringsTable(name)) ? substringsTable(name) : null,
      pending: this.exists(pendingTable(name)) ? this.pendingOf(c.schema, name) : null,
    };
    // Statements of generations this process no longer reads go with the new one's arrival.
    for (const old of c.tables.keys()) if (old < generation - 1) c.tables.delete(old);
    c.tables.set(generation, table);
    return table;
  }
}

/** The live generation of the collection given as the statement's first parameter. */
const LIVE_GENERATION = "SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'";

const idIndex = (table: string) => `CREATE UNIQUE INDEX IF NOT EXISTS ${table}_by_id ON ${table} (id);`;

/** A generation table's substring index: named outside `<collection>__g<n>`, the tables' own pattern. */
const substringsTable = (table: string) => `substrings_${table}`;
/** The rows of a generation table changed since its substring index was last brought up to date (see keepSubstringsByFlush). */
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

/** The SQL function the substring index is filled with: substringTokens(account, ...values). */
const TOKENS_FUNCTION = 'substring_tokens';

/** The filters with an index of their own: exact ones; a `contains-ci` filter scans the account's rows. */
const indexedFilters = (schema: CollectionSchema) => Object.keys(schema.filters).filter((f) => schema.filters[f] !== 'contains-ci');

/**
 * A document table's columns but id, parted by whether an index reads them (the partial indexes'
 * `deleted` included): a rewrite sets the plain ones and matches the indexed ones.
 */
function columnsByIndexing(schema: CollectionSchema): { plain: string[]; indexed: string[] } {
  const indexed = ['account_id', 'seq', 'deleted', ...indexedFilters(schema).map(filterColumn)];
  return { plain: allColumns(schema).filter((col) => col !== 'id' && !indexed.includes(col)), indexed };
}

/** A document table's columns, id first. */
function allColumns(schema: CollectionSchema): string[] {
  return [...DOCUMENT_COLUMNS, ...Object.keys(schema.filters).map(filterColumn)];
}

function positionOf(row: GenerationRow): Position | null {
  return row.commit_pos === null ? null : { commit: BigInt(row.commit_pos), prepare: BigInt(row.prepare_pos!) };
}

function toStatus(row: GenerationRow): GenerationStatus {
  return {
    generation: row.generation,
    position: positionOf(row),
    failure: row.failure ? (JSON.parse(row.failure) as ProjectionFailure) : null,
    updatedAt: row.updated_at,
  };
}

function toDocument(row: DocumentRow): ReadDocument {
  return {
    id: row.id,
    accountId: row.account_id,
    revision: row.revision,
    seq: row.seq,
    deleted: row.deleted === 1,
    created: row.created,
    fields: JSON.parse(row.fields) as Record<string, string>,
  };
}
