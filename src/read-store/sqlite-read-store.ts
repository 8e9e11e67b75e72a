import type { Statement } from 'better-sqlite3';
import { comparePositions, Position } from '../event-store/event-store.port';
import type { SqliteDatabase } from '../storage/sqlite-database';
import type { Checkpoint, CollectionSchema, FindQuery, FindResult, MatchKind, ReadDocument, ReadStore } from './read-store.port';

interface DocumentRow {
  id: string;
  account_id: string;
  revision: number;
  seq: number;
  deleted: number;
  created: number;
  fields: string;
}

interface Collection {
  schema: CollectionSchema;
  upsert: Statement;
  selectOne: Statement<[string, string], DocumentRow>;
  /** Takes the ids as one JSON array, so one statement serves any number of them. */
  selectMany: Statement<[string], DocumentRow>;
  /** Prepared find statements by filter combination, built on first use. */
  finds: Map<string, { page: Statement; count: Statement }>;
}

const NAME = /^[a-z][a-z0-9_]*$/;

/** The column a filter reads: values of case-insensitive filters are stored lowercased. */
const filterColumn = (field: string) => `f_${field}`;
const filterKey = (kind: MatchKind, value: string) => (kind === 'exact' ? value : value.toLowerCase());

/**
 * Read store on the embedded SQLite file: a table per collection with one indexed column per
 * filter, partial indexes over live rows in creation order, and checkpoints in their own table.
 */
export class SqliteReadStore implements ReadStore {
  private readonly collections = new Map<string, Collection>();
  private readonly selectCheckpoint: Statement<[string], { commit_pos: string; prepare_pos: string }>;
  private readonly upsertCheckpoint: Statement;

  constructor(private readonly db: SqliteDatabase) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS checkpoints (
        projection  TEXT PRIMARY KEY,
        commit_pos  TEXT NOT NULL,
        prepare_pos TEXT NOT NULL,
        updated_at  INTEGER NOT NULL
      );
    `);
    this.selectCheckpoint = db.prepare('SELECT commit_pos, prepare_pos FROM checkpoints WHERE projection = ?');
    this.upsertCheckpoint = db.prepare(
      `INSERT INTO checkpoints (projection, commit_pos, prepare_pos, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (projection) DO UPDATE SET commit_pos = excluded.commit_pos,
         prepare_pos = excluded.prepare_pos, updated_at = excluded.updated_at`,
    );
  }

  async ensureCollection(schema: CollectionSchema): Promise<void> {
    const names = [schema.name, ...Object.keys(schema.filters)];
    for (const name of names) if (!NAME.test(name)) throw new Error(`Invalid collection or field name: ${name}`);
    const t = schema.name;
    const filterFields = Object.keys(schema.filters);
    const columns = filterFields.map((f) => `, ${filterColumn(f)} TEXT NOT NULL`).join('');
    const exactIndexes = filterFields
      .filter((f) => schema.filters[f] !== 'contains-ci')
      .map(
        (f) =>
          `CREATE INDEX IF NOT EXISTS ${t}_by_${f} ON ${t} (account_id, ${filterColumn(f)}, seq) WHERE deleted = 0;`,
      )
      .join('\n');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS ${t} (
        id         TEXT    PRIMARY KEY,
        account_id TEXT    NOT NULL,
        revision   INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        deleted    INTEGER NOT NULL,
        created    INTEGER NOT NULL,
        fields     TEXT    NOT NULL${columns}
      );
      CREATE INDEX IF NOT EXISTS ${t}_by_account ON ${t} (account_id, seq) WHERE deleted = 0;
      ${exactIndexes}
    `);
    const allColumns = ['id', 'account_id', 'revision', 'seq', 'deleted', 'created', 'fields', ...filterFields.map(filterColumn)];
    const upsert = this.db.prepare(
      `INSERT INTO ${t} (${allColumns.join(', ')}) VALUES (${allColumns.map(() => '?').join(', ')})
       ON CONFLICT (id) DO UPDATE SET ${allColumns
         .slice(1)
         .map((c) => `${c} = excluded.${c}`)
         .join(', ')}
       WHERE excluded.revision > ${t}.revision`,
    );
    const selectOne = this.db.prepare<[string, string], DocumentRow>(
      `SELECT * FROM ${t} WHERE id = ? AND account_id = ? AND deleted = 0`,
    );
    const selectMany = this.db.prepare<[string], DocumentRow>(
      `SELECT * FROM ${t} WHERE id IN (SELECT value FROM json_each(?))`,
    );
    this.collections.set(t, { schema, upsert, selectOne, selectMany, finds: new Map() });
  }

  async getMany(collection: string, ids: string[]): Promise<Map<string, ReadDocument>> {
    const found = new Map<string, ReadDocument>();
    if (ids.length === 0) return found;
    for (const row of this.collection(collection).selectMany.all(JSON.stringify(ids))) found.set(row.id, toDocument(row));
    return found;
  }

  async get(collection: string, accountId: string, id: string): Promise<ReadDocument | null> {
    const row = this.collection(collection).selectOne.get(id, accountId);
    return row ? toDocument(row) : null;
  }

  async find(collection: string, query: FindQuery): Promise<FindResult> {
    const c = this.collection(collection);
    const fields = Object.keys(query.filters).sort();
    const key = `${fields.join(',')}|${query.order}`;
    let statements = c.finds.get(key);
    if (!statements) {
      const where = ['account_id = ?', 'deleted = 0'];
      for (const f of fields) {
        const kind = c.schema.filters[f];
        if (!kind) throw new Error(`Collection ${collection} has no filter ${f}`);
        where.push(kind === 'contains-ci' ? `instr(${filterColumn(f)}, ?) > 0` : `${filterColumn(f)} = ?`);
      }
      const clause = where.join(' AND ');
      statements = {
        page: this.db.prepare(
          `SELECT * FROM ${collection} WHERE ${clause} ORDER BY seq ${query.order === 'newest' ? 'DESC' : 'ASC'} LIMIT ? OFFSET ?`,
        ),
        count: this.db.prepare(`SELECT count(*) AS total FROM ${collection} WHERE ${clause}`).pluck(),
      };
      c.finds.set(key, statements);
    }
    const params = [query.accountId, ...fields.map((f) => filterKey(c.schema.filters[f], query.filters[f]))];
    const rows = statements.page.all(...params, query.limit, query.offset) as DocumentRow[];
    const total = statements.count.get(...params) as number;
    return { documents: rows.map(toDocument), total };
  }

  async commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint): Promise<void> {
    const c = this.collection(collection);
    const filterFields = Object.keys(c.schema.filters);
    this.db.transaction(() => {
      for (const d of documents) {
        c.upsert.run(
          d.id,
          d.accountId,
          d.revision,
          d.seq,
          d.deleted ? 1 : 0,
          d.created,
          JSON.stringify(d.fields),
          ...filterFields.map((f) => filterKey(c.schema.filters[f], d.fields[f] ?? '')),
        );
      }
      // The checkpoint only moves forward, whatever order writers (other processes too) arrive in.
      const saved = this.readCheckpoint(checkpoint.projection);
      if (saved && comparePositions(checkpoint.position, saved) <= 0) return;
      const { commit, prepare } = checkpoint.position;
      this.upsertCheckpoint.run(checkpoint.projection, commit.toString(), prepare.toString(), Date.now());
    }).immediate();
  }

  async getCheckpoint(projection: string): Promise<Position | null> {
    return this.readCheckpoint(projection);
  }

  /** Closes the connection this store was given. */
  async close(): Promise<void> {
    this.db.close();
  }

  private readCheckpoint(projection: string): Position | null {
    const row = this.selectCheckpoint.get(projection);
    return row ? { commit: BigInt(row.commit_pos), prepare: BigInt(row.prepare_pos) } : null;
  }

  private collection(name: string): Collection {
    const c = this.collections.get(name);
    if (!c) throw new Error(`Unknown collection ${name}: call ensureCollection first`);
    return c;
  }
}

function toDocument(row: DocumentRow): ReadDocument {
  return {
    id: row.id,
    accountId: row.account_id,
    revision: row.revision,
    seq: row.seq,
    deleted: row.deleted === 1,
    created: row.created,
    fields: JSON.parse(row.fields),
  };
}
