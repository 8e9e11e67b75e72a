import { checkpointAndTruncate, SqliteDatabase, transactions } from '../storage/sqlite-database';
import { sqliteFailure } from '../storage/store-unavailable.error';
import { assertPromotable, assertWritable, nextCheckpoint, nextGeneration } from './generation-rules';
import { inUse, positionOf, schemaOf, SqliteGenerations, toStatus } from './sqlite-generations';
import {
  Checkpoint,
  CollectionSchema,
  CollectionStatus,
  COUNT_LIMIT,
  FilterNotBuiltError,
  FindQuery,
  FindResult,
  GenerationReplacedError,
  ParkedChanges,
  ParkedStream,
  ParkRequest,
  ProjectionFailure,
  ReadDocument,
  ReadStore,
  SkippedEvent,
} from './read-store.port';
import { ROWIDS_IN_MEMORY, SqliteBulkBuilds, writeRows } from './sqlite-bulk-build';
import { SqliteReadLeases } from './sqlite-read-leases';
import { SqliteParked } from './sqlite-parked';
import {
  createIndexes,
  createTable,
  DocumentRow,
  filterColumn,
  filterKey,
  findStatements,
  FindTable,
  liveReads,
  LiveRow,
  rowValues,
  RowValues,
  rowWrites,
  RowWrites,
  tableName,
  toDocument,
} from './sqlite-read-tables';
import { Pending, SqliteSubstringIndexes, SUBSTRINGS_FLUSH_AT } from './sqlite-substring-index';
import { readsSubstrings } from './substrings';

/** The prepared statements of one generation's table, for the schema it was built with. */
interface Table extends ReturnType<typeof liveReads>, FindTable {
  generation: number;
  values: RowValues;
  writes: RowWrites;
  /** Its substring index, or null where it has none (a generation being built, or retired before it had one). */
  substrings: string | null;
  /** The rows waiting for its substring index; null where there is no index. */
  pending: Pending | null;
}

interface Collection {
  /** The code's schema: what the next rebuild builds. Each generation's table goes by its own (Table.schema). */
  schema: CollectionSchema;
  tables: Map<number, Table>;
}

const NAME = /^[a-z][a-z0-9_]*$/;

/**
 * Read store on the embedded SQLite file: a table per collection generation with one indexed column
 * per filter of the schema the generation was built with, partial indexes over live rows in creation
 * order, and the generations (state, checkpoint, failure, schema) in their own table. Every read looks
 * up the live generation, so a promotion made by another process (the CLI's rebuild) is seen by the
 * next read. The substring indexes (sqlite-substring-index.ts) and a rebuild's bulk writes
 * (sqlite-bulk-build.ts) are modules of their own; the generations' rules are generation-rules.ts.
 */
export class SqliteReadStore implements ReadStore {
  private readonly collections = new Map<string, Collection>();
  private readonly transaction: ReturnType<typeof transactions>;
  private readonly builds: SqliteBulkBuilds;
  private readonly substrings: SqliteSubstringIndexes;
  private readonly leases: SqliteReadLeases;
  /** The generation of each collection live at its last read: where the next read looks first. */
  private readonly lastLive = new Map<string, number>();
  private readonly generations: SqliteGenerations;
  private readonly parkedStreams: SqliteParked;

  constructor(
    private readonly db: SqliteDatabase,
    rowidsInMemory = ROWIDS_IN_MEMORY,
  ) {
    this.transaction = transactions(db);
    this.builds = new SqliteBulkBuilds(db, rowidsInMemory);
    this.substrings = new SqliteSubstringIndexes(db);
    this.leases = new SqliteReadLeases(db);
    this.generations = new SqliteGenerations(db);
    this.parkedStreams = new SqliteParked(db);
  }

  async ensureCollection(schema: CollectionSchema): Promise<void> {
    const names = [schema.name, ...Object.keys(schema.filters)];
    for (const name of names) {
      if (!NAME.test(name) || name.includes('__')) throw new Error(`Invalid collection or field name: ${name}`);
    }
    this.collections.set(schema.name, { schema, tables: new Map() });
    this.transaction.immediate(() => {
      const generations = this.generations.all.all(schema.name);
      if (generations.length === 0) {
        this.generations.insert(schema, 1, 'live');
        createTable(this.db, schema, 1);
        return this.index(schema, 1);
      }
      // A live generation made before generations kept their schema is taken as built with this one.
      this.generations.stamp(schema);
      // A store made before the substring index gets one on its live generation, once; an index
      // kept record by record (an earlier version's) is kept through the rows waiting from now
      // on: the live one's, and a retired one's, still read for a while.
      for (const g of generations) {
        if (g.state === 'retired') this.substrings.keepByFlush(schemaOf(schema, g), g.generation);
        if (g.state === 'live') this.index(schemaOf(schema, g), g.generation, { substringsOnly: true });
      }
    });
  }

  async getMany(collection: string, ids: string[], generation?: number): Promise<Map<string, ReadDocument>> {
    const found = new Map<string, ReadDocument>();
    if (ids.length === 0) return found;
    if (generation !== undefined) this.assertWritable(collection, generation);
    const table = this.table(collection, generation ?? this.liveGeneration(collection));
    const build = this.builds.get(collection, table.generation);
    const rows = (build && this.builds.selectMany(build, ids)) ?? table.selectMany.all(JSON.stringify(ids));
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
    const fields = Object.keys(query.filters).sort();
    // The limit is part of the statement, not a parameter: better-sqlite3 builds SQLite with STAT4,
    // and a bound LIMIT makes it plan the statement again on every run (twice the cost of the page).
    if (!Number.isSafeInteger(query.limit) || query.limit < 0) throw new Error(`A list's limit must be a whole number, not ${query.limit}`);
    const key = `${fields.join(',')}|${query.order}|${query.limit}|${query.after === undefined ? '' : 'after'}`;
    const { documents, total } = this.readLive(collection, (table) => {
      // The values as the generation's table keeps them: its own schema's match kinds.
      const { schema } = table;
      const params = [query.accountId, ...fields.map((f) => filterKey(schema.filters[f], query.filters[f]))];
      const read = (byIndex: boolean) => {
        const statements = findStatements(this.db, table, this.collection(collection).schema, fields, key, query, byIndex);
        if (statements.bySubstrings && table.pending?.waiting()) return undefined;
        // Through the substring index, its query comes first: the account's records holding every piece.
        const match = statements.bySubstrings ? [this.substrings.match(schema, query)] : [];
        const { live_generation: live, total } =
          query.count === false
            ? { live_generation: this.generations.live.get(collection) ?? null, total: 0 }
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
      if (found === undefined && this.substrings.flushAtOnce(table.pending)) found = inOneSnapshot(true);
      return found ?? inOneSnapshot(false)!;
    });
    return { documents, total: Math.min(total, COUNT_LIMIT), capped: total > COUNT_LIMIT };
  }

  async pageById(collection: string, after: string, limit: number): Promise<ReadDocument[]> {
    const { rows } = this.readLive(collection, (table) => ({ rows: table.selectAfter.all(after, limit), live: this.generations.live.get(collection) ?? null }));
    return rows.map(toDocument);
  }

  /** A row read with the generation live then; no row, no generation with it: a miss (a 404) looks the live one up on its own. */
  private withLive<T>(collection: string, found: LiveRow<T> | undefined): { live: number | null; row: LiveRow<T> | undefined } {
    return { live: found ? found.live_generation : (this.generations.live.get(collection) ?? null), row: found };
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
        // The generation last read was retired and dropped since, or lacks a filter the one
        // promoted since has: look the live one up.
        const lacking = error instanceof FilterNotBuiltError;
        if (attempt > 1 || !(lacking || /no such table/.test((error as Error).message))) throw error;
        const live = this.liveGeneration(collection);
        if (lacking && live === generation) throw error;
        generation = live;
        this.collection(collection).tables.delete(generation);
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

  async commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint, parked?: ParkedChanges): Promise<void> {
    const { generation, position } = checkpoint;
    const build = this.builds.get(collection, generation);
    const rowids = build?.rowids ?? null;
    let nextRowid = 0;
    try {
      this.transaction.immediate(() => {
        const state = this.assertWritable(collection, generation);
        const table = this.table(collection, generation);
        if (state === 'building' && !build) {
          throw new Error(`Generation ${generation} of ${collection} is being built by another process`);
        }
        if (build) nextRowid = this.builds.write(build, table.values, table.writes, documents);
        else writeRows(table.values, table.writes, documents);
        // A large batch's tokens go in the substring index with it, a small one's a little later.
        if (documents.length >= SUBSTRINGS_FLUSH_AT) table.pending?.flush();
        if (parked) this.parkedStreams.apply(collection, generation, parked);
        const next = nextCheckpoint(positionOf(this.generations.one.get(collection, generation)!), position);
        this.generations.saveCheckpointOf(collection, generation, next);
      });
    } catch (error) {
      if (build) this.builds.rolledBack(build, rowids);
      throw sqliteFailure(error);
    }
    if (build) this.builds.committed(build, nextRowid);
    if (documents.length > 0 && documents.length < SUBSTRINGS_FLUSH_AT) this.flushSubstringsSoon(collection, generation);
  }

  /** A flush of the generation's substring index soon, if it has one, for as long as it stays live. */
  private flushSubstringsSoon(collection: string, generation: number): void {
    if (!this.table(collection, generation).pending) return;
    this.substrings.flushSoon(tableName(collection, generation), () =>
      this.generations.state.get(collection, generation) === 'live' ? this.table(collection, generation).pending : null,
    );
  }

  async recordFailure(collection: string, generation: number, failure: ProjectionFailure): Promise<void> {
    this.generations.saveFailureOf(collection, generation, failure);
  }

  async parked(collection: string, generation: number, limit?: number): Promise<ParkedStream[]> {
    return this.parkedStreams.list(collection, generation, limit);
  }

  async parkedCount(collection: string, generation: number): Promise<{ streams: number; events: number }> {
    return this.parkedStreams.count(collection, generation);
  }

  async requestParked(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): Promise<string[]> {
    try {
      return this.transaction.immediate(() => this.parkedStreams.request(collection, generation, streamIds, request));
    } catch (error) {
      throw sqliteFailure(error);
    }
  }

  async parkedRequests(collection: string, generation: number): Promise<number> {
    return this.parkedStreams.requests(collection, generation);
  }

  async skipped(collection: string): Promise<(SkippedEvent & { generation: number })[]> {
    return this.parkedStreams.skipped(collection);
  }

  async status(collection: string): Promise<CollectionStatus> {
    const rows = this.generations.all.all(collection);
    const live = rows.find((r) => r.state === 'live');
    if (!live) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    const building = rows.find((r) => r.state === 'building');
    return { live: toStatus(live), building: building ? toStatus(building) : null };
  }

  async fingerprint(collection: string, generation: number): Promise<string | null> {
    return this.generations.one.get(collection, generation)?.fingerprint ?? null;
  }

  async startRebuild(collection: string): Promise<number> {
    const { schema } = this.collection(collection);
    const generation = this.transaction.immediate(() => {
      const rows = this.generations.all.all(collection);
      for (const row of rows.filter((r) => r.state === 'building')) this.dropGeneration(collection, row.generation);
      const next = nextGeneration(rows.map((r) => r.generation));
      this.generations.insert(schema, next, 'building');
      // No index until the promotion (see sqlite-bulk-build.ts).
      createTable(this.db, schema, next);
      return next;
    });
    this.builds.start(schema, generation);
    return generation;
  }

  async promote(collection: string, generation: number): Promise<void> {
    const { schema } = this.collection(collection);
    // Built before the swap, in a transaction of its own so a refused promotion keeps them.
    this.transaction.immediate(() => {
      const row = this.generations.one.get(collection, generation);
      if (row?.state === 'building') this.index(schemaOf(schema, row), generation);
    });
    this.transaction.immediate(() => {
      const rows = this.generations.all.all(collection);
      const live = rows.find((r) => r.state === 'live')!;
      const building = rows.find((r) => r.generation === generation && r.state === 'building');
      assertPromotable(collection, inUse(rows), generation, building ? positionOf(building) : null, positionOf(live));
      const now = Date.now();
      this.generations.setStateOf(collection, live.generation, 'retired', now);
      this.generations.setStateOf(collection, generation, 'live', now);
    });
    // Indexed and live now: written like any live generation from here on.
    this.builds.end(collection, generation);
    if (this.builds.size === 0) await this.truncateLog();
  }

  async abandonRebuild(collection: string, generation: number): Promise<void> {
    try {
      this.transaction.immediate(() => {
        if (this.generations.state.get(collection, generation) === 'building') this.dropGeneration(collection, generation);
      });
    } finally {
      // Over for this process even when the drop failed (the next rebuild drops it) or another process had dropped it.
      this.builds.end(collection, generation);
    }
  }

  async erase(collection: string, ids: string[]): Promise<void> {
    const { schema } = this.collection(collection);
    try {
      this.transaction.immediate(() => {
        for (const row of this.generations.all.all(collection)) {
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
          if (row.state !== 'building') this.substrings.pendingOf(schemaOf(schema, row), t)?.flush();
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
      for (const row of this.generations.all.all(collection)) {
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

  acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    return this.leases.acquireLease(name, holder, ttlMs, replacing);
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return this.leases.releaseLease(name, holder);
  }

  /** Closes the connection this store was given. Rows waiting for the substring index wait in the file: the next find or flush takes them. */
  async close(): Promise<void> {
    this.substrings.close();
    this.db.close();
  }

  /**
   * A generation's indexes (or its substring index alone), then its substring index's triggers:
   * statements prepared before those read the table without them, and are prepared again.
   */
  private index(schema: CollectionSchema, generation: number, { substringsOnly = false } = {}): void {
    if (!substringsOnly) createIndexes(this.db, schema, generation);
    if (this.substrings.create(schema, generation)) this.collections.get(schema.name)?.tables.delete(generation);
  }

  private dropGeneration(collection: string, generation: number): void {
    this.collections.get(collection)?.tables.delete(generation);
    this.builds.end(collection, generation);
    const t = tableName(collection, generation);
    this.db.exec(`DROP TABLE IF EXISTS ${t}; ${this.substrings.dropSql(t)}`);
    this.generations.setStateOf(collection, generation, 'dropped');
    this.parkedStreams.drop(collection, generation);
  }

  private assertWritable(collection: string, generation: number): 'live' | 'building' {
    try {
      return assertWritable(collection, this.generations.inUse(collection), generation);
    } catch (error) {
      // Another process replaced or dropped it: this process's build of it, if any, is over.
      if (error instanceof GenerationReplacedError) this.builds.end(collection, generation);
      throw error;
    }
  }

  private liveGeneration(collection: string): number {
    const generation = this.generations.live.get(collection);
    if (generation === undefined) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    return generation;
  }

  private collection(name: string): Collection {
    const c = this.collections.get(name);
    if (!c) throw new Error(`Unknown collection ${name}: call ensureCollection first`);
    return c;
  }

  /** The statements of one generation's table, prepared on first use (another process may have made it) for the schema it was built with. */
  private table(collection: string, generation: number): Table {
    const c = this.collection(collection);
    let table = c.tables.get(generation);
    if (table) return table;
    const name = tableName(collection, generation);
    const schema = schemaOf(c.schema, this.generations.one.get(collection, generation));
    table = {
      name,
      generation,
      schema,
      values: rowValues(schema),
      writes: rowWrites(this.db, schema, name),
      ...liveReads(this.db, name),
      finds: new Map(),
      substrings: this.substrings.indexOf(name),
      pending: this.substrings.pendingOf(schema, name),
    };
    // Statements of generations this process no longer reads go with the new one's arrival.
    for (const old of c.tables.keys()) if (old < generation - 1) c.tables.delete(old);
    c.tables.set(generation, table);
    return table;
  }
}
