import type { Statement } from 'better-sqlite3';
import type { SqliteDatabase } from '../storage/sqlite-database';
import type { CollectionSchema, ReadDocument } from './read-store.port';
import { allColumns, DOCUMENT, DocumentRow, idIndex, RowValues, RowWrites, tableName } from './sqlite-read-tables';
import { RowidTable } from './rowid-table';

/**
 * Documents a rebuild finds through its rowid table (about 50 bytes each: at most about 100 MB) before
 * it builds the id index instead (see Build), unless told otherwise (REBUILD_ROWIDS).
 */
export const ROWIDS_IN_MEMORY = 2_000_000;

/** Rows a build inserts with one statement (see Build.nextRowid); 11 parameters each for customers. */
const INSERT_ROWS = 64;

/**
 * WAL pages (about 40 MB) a rebuilding connection lets accumulate before checkpointing, where it
 * would checkpoint sooner: a connection of the read models' own (the events in EventStoreDB), whose
 * default is 1,000. The event store's durable connection, which they share on SQLite, already waits longer.
 */
const REBUILD_WAL_CHECKPOINT_PAGES = 10_000;

/**
 * A generation this process is building. Its table has no index until the promotion, not even on id:
 * keeping a random-key index up to date row by row is most of a large rebuild's cost. Rows are found
 * by rowid instead, through `rowids`, a table outside the JavaScript heap (rowid-table.ts). Past
 * `rowidsInMemory` documents the id index is built once, the table let go (null), and the rest of
 * the rebuild writes through the index like a live generation: memory stays bounded whatever the
 * store holds.
 */
export interface Build {
  name: string;
  rowids: RowidTable | null;
  /** Set once the rowid table was let go after a failed commit: the next commit builds the id index first. */
  needsIdIndex?: boolean;
  /**
   * The rowid the next new row gets: given by this store, not by SQLite, so new rows go in
   * INSERT_ROWS at a time, one statement each, rather than one (and one call into SQLite) per row.
   * Only this process writes the table while it builds it (the store refuses another's commits).
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

/** The bulk builds of the SQLite read store's rebuilds, by table name, and the connection's settings while any runs. */
export class SqliteBulkBuilds {
  private readonly builds = new Map<string, Build>();
  /** The connection's own wal_autocheckpoint, given back once no build is left (see start). */
  private checkpointPagesBefore = 0;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly rowidsInMemory = ROWIDS_IN_MEMORY,
  ) {}

  get size(): number {
    return this.builds.size;
  }

  get(collection: string, generation: number): Build | undefined {
    return this.builds.get(tableName(collection, generation));
  }

  /** Starts building the (just made, unindexed) table of `generation`. */
  start(schema: CollectionSchema, generation: number): void {
    const name = tableName(schema.name, generation);
    const columns = allColumns(schema);
    const row = `(${['rowid', ...columns].map(() => '?').join(', ')})`;
    const insert = (rows: number) => this.db.prepare(`INSERT INTO ${name} (rowid, ${columns.join(', ')}) VALUES ${Array(rows).fill(row).join(', ')}`);
    this.builds.set(name, {
      name,
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
    });
    // This connection now fills a table in large batches: checkpoint the WAL less often, since each
    // checkpoint syncs and copies back pages the next batches dirty again. Commits stay atomic and
    // checkpoints synced (synchronous is unchanged), so a crash still leaves the live model intact.
    if (this.builds.size === 1) this.checkpointPagesBefore = this.db.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.pragma(`wal_autocheckpoint = ${Math.max(REBUILD_WAL_CHECKPOINT_PAGES, this.checkpointPagesBefore)}`);
  }

  /** A build promoted, replaced or dropped: once none is left, the connection (the event store's too, in the service) checkpoints as usual again. */
  end(collection: string, generation: number): void {
    if (this.builds.delete(tableName(collection, generation)) && this.builds.size === 0) this.db.pragma(`wal_autocheckpoint = ${this.checkpointPagesBefore}`);
  }

  /** The build's documents `ids`, by their rowids while it has its rowid table; undefined once it found rows by the id index. */
  selectMany(build: Build, ids: string[]): DocumentRow[] | undefined {
    const rowids = build.rowids;
    if (!rowids) return undefined;
    return build.selectByRowids.all(JSON.stringify(ids.map((id) => rowids.get(id)).filter((rowid) => rowid !== undefined)));
  }

  /**
   * Writes a batch into the build's table, within the commit's transaction. Returns the rowid the
   * next new row is to get, for `committed` once the transaction is; should it roll back, `rolledBack`.
   */
  write(build: Build, values: RowValues, writes: RowWrites, documents: ReadDocument[]): number {
    if (build.needsIdIndex) {
      this.db.exec(idIndex(build.name));
      build.needsIdIndex = false;
    }
    const rowids = build.rowids;
    if (!rowids) {
      writeRows(values, writes, documents);
      return build.nextRowid;
    }
    // Rows of this batch get rowids from here on, and go in the rowid table as they are inserted
    // (should the transaction fail, `rolledBack` lets the table go).
    const first = build.nextRowid;
    let nextRowid = first;
    // New rows, waiting to go in INSERT_ROWS at a time: each its rowid, then its values.
    const perRow = 1 + values.perRow;
    const waiting: unknown[] = new Array(INSERT_ROWS * perRow);
    let filled = 0;
    const insertWaiting = () => {
      if (filled === waiting.length) build.insertMany.run(waiting);
      else for (let at = 0; at < filled; at += perRow) build.insert.run(waiting.slice(at, at + perRow));
      filled = 0;
    };
    for (const d of documents) {
      const rowid = rowids.add(d.id, nextRowid);
      if (rowid === undefined) {
        waiting[filled] = nextRowid++;
        filled = values.put(d, waiting, filled + 1);
        if (filled === waiting.length) insertWaiting();
      } else {
        // Its row may be among those waiting (a document given twice).
        if (rowid >= first) insertWaiting();
        const row: unknown[] = new Array(values.perRow);
        values.put(d, row, 0);
        build.update.run(...row.slice(1), rowid, d.revision);
      }
    }
    if (filled > 0) insertWaiting();
    return nextRowid;
  }

  /** A batch `write` wrote is committed: past rowidsInMemory documents, the build goes on by the id index. */
  committed(build: Build, nextRowid: number): void {
    build.nextRowid = nextRowid;
    if (build.rowids && build.rowids.size > this.rowidsInMemory) {
      this.db.exec(idIndex(build.name));
      build.rowids = null;
    }
  }

  /**
   * A batch rolled back, `rowids` the build's rowid table before it: the table names rows never
   * written, whose rowids the next batch would give others. It is let go; the rest of the build finds
   * rows by the id index.
   */
  rolledBack(build: Build, rowids: RowidTable | null): void {
    if (rowids && build.rowids === rowids) {
      build.rowids = null;
      build.needsIdIndex = true;
    }
  }
}

/** Writes a batch through the id index: a live generation's, or a build's past its rowid table. */
export function writeRows(values: RowValues, writes: RowWrites, documents: ReadDocument[]): void {
  for (const d of documents) {
    const row: unknown[] = new Array(values.perRow);
    values.put(d, row, 0);
    // A new record (revision 0) has no row to rewrite.
    if (d.revision === 0 || !writes.rewrite(row)) writes.upsert().run(...row);
  }
}
