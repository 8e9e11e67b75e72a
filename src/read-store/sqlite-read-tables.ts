import type { Statement } from 'better-sqlite3';
import { SqliteDatabase, TEXT_KEY } from '../storage/sqlite-database';
import { COUNT_LIMIT, FilterNotBuiltError, type CollectionSchema, type FindQuery, type MatchKind, type ReadDocument } from './read-store.port';
import { readsSubstrings } from './substrings';

/** The SQLite read store's tables of documents: their names, columns, rows and indexes. */

/** The columns a document is read from, id first: not the filter columns, which only queries use (fewer columns, cheaper rows). */
const DOCUMENT_COLUMNS = ['id', 'account_id', 'revision', 'seq', 'deleted', 'created', 'fields'];
export const DOCUMENT = DOCUMENT_COLUMNS.join(', ');

export interface DocumentRow {
  id: string;
  account_id: string;
  revision: number;
  seq: number;
  deleted: number;
  created: number;
  fields: string;
}

/** A row read together with the generation live when it was read. */
export type LiveRow<T> = T & { live_generation: number | null };

/** The live generation of the collection given as the statement's first parameter. */
export const LIVE_GENERATION = "SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'";

/** SQLite's sorter threads for a promotion's indexes (`PRAGMA threads`): the helper threads beside the connection's own. */
const SORT_THREADS = 2;

/** The column a filter reads: values of case-insensitive filters are stored lowercased. */
export const filterColumn = (field: string) => `f_${field}`;
export const filterKey = (kind: MatchKind, value: string) => (kind === 'exact' ? value : value.toLowerCase());
/** `__` is kept out of collection names, so generation tables cannot collide with a collection. */
export const tableName = (collection: string, generation: number) => `${collection}__g${generation}`;

export const idIndex = (table: string) => `CREATE UNIQUE INDEX IF NOT EXISTS ${table}_by_id ON ${table} (id);`;

/** The filters with an index of their own: exact ones; a `contains-ci` filter scans the account's rows. */
const indexedFilters = (schema: CollectionSchema) => Object.keys(schema.filters).filter((f) => schema.filters[f] !== 'contains-ci');

/** A document table's columns, id first. */
export function allColumns(schema: CollectionSchema): string[] {
  return [...DOCUMENT_COLUMNS, ...Object.keys(schema.filters).map(filterColumn)];
}

/**
 * A document table's columns but id, parted by whether an index reads them (the partial indexes'
 * `deleted` included): a rewrite sets the plain ones and matches the indexed ones.
 */
function columnsByIndexing(schema: CollectionSchema): { plain: string[]; indexed: string[] } {
  const indexed = ['account_id', 'seq', 'deleted', ...indexedFilters(schema).map(filterColumn)];
  return { plain: allColumns(schema).filter((col) => col !== 'id' && !indexed.includes(col)), indexed };
}

/** How a table built with `schema` takes a document: its values per row, in the table's column order. */
export interface RowValues {
  /** Values of one row. */
  perRow: number;
  /** Puts the document's values `at` in `into`, from `from`. Returns where they ended. */
  put(d: ReadDocument, into: unknown[], from: number): number;
}

export function rowValues(schema: CollectionSchema): RowValues {
  const filterFields = Object.keys(schema.filters);
  const kinds = filterFields.map((f) => schema.filters[f]);
  return {
    perRow: DOCUMENT_COLUMNS.length + filterFields.length,
    put(d, into, from) {
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
    },
  };
}

export function toDocument(row: DocumentRow): ReadDocument {
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

/**
 * A generation's table, without indexes (see createIndexes): a rebuild fills its table without them
 * (see sqlite-bulk-build.ts) and builds them once before the promotion, which is much cheaper than
 * keeping them up to date row by row.
 */
export function createTable(db: SqliteDatabase, schema: CollectionSchema, generation: number): void {
  const t = tableName(schema.name, generation);
  const columns = Object.keys(schema.filters)
    .map((f) => `, ${filterColumn(f)} TEXT NOT NULL`)
    .join('');
  db.exec(`
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
}

/** The id index, and partial indexes over live rows in creation order: the account's, and each exact filter's. */
export function createIndexes(db: SqliteDatabase, schema: CollectionSchema, generation: number): void {
  const t = tableName(schema.name, generation);
  const exactIndexes = indexedFilters(schema)
    .map((f) => `CREATE INDEX IF NOT EXISTS ${t}_by_${f} ON ${t} (account_id, ${filterColumn(f)}, seq) WHERE deleted = 0;`)
    .join('\n');
  // The sorts of a filled table's indexes (a rebuild's promotion) in SQLite's helper threads too:
  // nothing else runs beside a promotion, so a second core would idle. Same indexes, built faster.
  const threads = db.pragma('threads', { simple: true }) as number;
  db.pragma(`threads = ${SORT_THREADS}`);
  try {
    db.exec(`
      ${idIndex(t)}
      CREATE INDEX IF NOT EXISTS ${t}_by_account ON ${t} (account_id, seq) WHERE deleted = 0;
      ${exactIndexes}
    `);
  } finally {
    db.pragma(`threads = ${threads}`);
  }
}

/** The statements that write a generation's table outside a bulk build, prepared on first use. */
export interface RowWrites {
  /** Inserts, or overwrites with a newer revision, by id: needs the id index, so prepared on first use. */
  upsert(): Statement;
  /**
   * Overwrites with a newer revision only the columns no index reads, where every indexed one keeps
   * its value; no row changed otherwise. SQLite rewrites the entry of every index whose column an
   * UPDATE sets, same value or not: ten updates of the name dirtied 39 pages of the log in one
   * commit through the upsert, 10 through this. Takes the upsert's values; prepared on first use.
   */
  rewrite(values: unknown[]): boolean;
}

export function rowWrites(db: SqliteDatabase, schema: CollectionSchema, name: string): RowWrites {
  const columns = allColumns(schema);
  let upsert: Statement | undefined;
  let rewrite: Statement | undefined;
  // Where each of the rewrite's parameters is among the upsert's values (see columnsByIndexing).
  const { plain, indexed } = columnsByIndexing(schema);
  const at = (col: string) => columns.indexOf(col);
  const rewriteParams = [...plain.map(at), at('id'), at('revision'), ...indexed.map(at)];
  return {
    upsert: () =>
      (upsert ??= db.prepare(
        `INSERT INTO ${name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
         ON CONFLICT (id) DO UPDATE SET ${columns
           .slice(1)
           .map((col) => `${col} = excluded.${col}`)
           .join(', ')}
         WHERE excluded.revision > ${name}.revision`,
      )),
    rewrite: (values) =>
      (rewrite ??= db.prepare(
        `UPDATE ${name} SET ${plain.map((col) => `${col} = ?`).join(', ')}
         WHERE id = ? AND revision < ? AND ${indexed.map((col) => `${col} = ?`).join(' AND ')}`,
      )).run(...rewriteParams.map((i) => values[i])).changes === 1,
  };
}

/** The statements that read a generation's table for the live reads, the generation live then with each row. */
export function liveReads(db: SqliteDatabase, name: string) {
  return {
    // The live generation as a subquery, not a join: SQLite 3.54 runs the join form several times slower.
    /** Parameters by position (collection, id, account): binding by name cost a quarter of the statement. */
    selectOne: db.prepare<[string, string, string], LiveRow<DocumentRow>>(
      `SELECT (${LIVE_GENERATION}) AS live_generation, ${DOCUMENT} FROM ${name} WHERE id = ? AND account_id = ? AND deleted = 0`,
    ),
    /** The account's oldest live document, like selectOne. */
    selectOldest: db.prepare<[string, string], LiveRow<DocumentRow>>(
      `SELECT (${LIVE_GENERATION}) AS live_generation, ${DOCUMENT} FROM ${name} WHERE account_id = ${TEXT_KEY} AND deleted = 0 ORDER BY seq LIMIT 1`,
    ),
    /** Takes the ids as one JSON array, so one statement serves any number of them. */
    selectMany: db.prepare<[string], DocumentRow>(`SELECT ${DOCUMENT} FROM ${name} WHERE id IN (SELECT value FROM json_each(?))`),
    /** A page of every row in id order, after an id (see ReadDocuments.pageById). */
    selectAfter: db.prepare<[string, number], DocumentRow>(`SELECT ${DOCUMENT} FROM ${name} WHERE id > ? ORDER BY id LIMIT ?`),
  };
}

/** What a find needs of a generation's table: its name, the schema it was built with, its substring index, its statements. */
export interface FindTable {
  name: string;
  schema: CollectionSchema;
  substrings: string | null;
  /** Prepared find statements by filter combination, order and limit, built on first use. */
  finds: Map<string, { bySubstrings: boolean; page: Statement; count: Statement }>;
}

/**
 * The page and count statements of a filter combination on one table, prepared on first use.
 * Every shape costs what its page and COUNT_LIMIT cost, not what the account holds: the count
 * stops past COUNT_LIMIT; the page starts past `after` by an index and skips at most
 * MAX_LIST_OFFSET; an exact filter reads its index; substring filters alone read the substring
 * index in creation order (its rowid is the record's seq), each candidate checked with instr.
 */
export function findStatements(
  db: SqliteDatabase,
  table: FindTable,
  codeSchema: CollectionSchema,
  fields: string[],
  key: string,
  { order, limit, after }: FindQuery,
  byIndex = true,
) {
  const collection = codeSchema.name;
  const { schema } = table;
  key = byIndex ? key : `${key}|no index`;
  let statements = table.finds.get(key);
  if (!statements) {
    const where = [`account_id = ${TEXT_KEY}`, 'deleted = 0'];
    for (const f of fields) {
      const kind = schema.filters[f];
      if (!kind && codeSchema.filters[f]) throw new FilterNotBuiltError('SQLite', collection, f);
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
      page: db.prepare(`SELECT ${DOCUMENT} FROM ${from}${past} ORDER BY ${sorted} ${order === 'newest' ? 'DESC' : 'ASC'} LIMIT ${limit} OFFSET ?`),
      count: db.prepare(`SELECT (${LIVE_GENERATION}) AS live_generation, (SELECT count(*) FROM (SELECT 1 FROM ${from} LIMIT ${COUNT_LIMIT + 1})) AS total`),
    };
    table.finds.set(key, statements);
  }
  return statements;
}
