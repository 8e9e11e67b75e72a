import type { Statement } from 'better-sqlite3';
import type { Position } from '../event-store/event-store.port';
import { SqliteDatabase, TEXT_KEY, transactions } from '../storage/sqlite-database';
import { generationSchema, InUse, schemaFingerprint } from './generation-rules';
import type { CollectionSchema, GenerationStatus, MatchKind, ProjectionFailure } from './read-store.port';

interface GenerationRow {
  generation: number;
  /** A dropped generation keeps its row, so generation numbers are never reused. */
  state: 'live' | 'building' | 'retired' | 'dropped';
  commit_pos: string | null;
  prepare_pos: string | null;
  failure: string | null;
  updated_at: number;
  /** The schema it was built with (see schemaFingerprint), and its filters as JSON; null if made before generations kept them. */
  fingerprint: string | null;
  filters: string | null;
}

/** The SQLite read store's table of generations: each one's state, checkpoint, failure and schema. */
export class SqliteGenerations {
  readonly all: Statement<[string], GenerationRow>;
  readonly one: Statement<[string, number], GenerationRow>;
  /** The live generation's number. */
  readonly live: Statement<[string], number>;
  readonly state: Statement<[string, number], string>;
  private readonly selectInUse: Statement<[string], Pick<GenerationRow, 'generation' | 'state'>>;
  private readonly saveCheckpoint: Statement;
  private readonly saveFailure: Statement;
  private readonly setState: Statement;
  private readonly insertGeneration: Statement;
  private readonly stampSchema: Statement;

  constructor(db: SqliteDatabase) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS read_model_generations (
        collection  TEXT    NOT NULL,
        generation  INTEGER NOT NULL,
        state       TEXT    NOT NULL CHECK (state IN ('live', 'building', 'retired', 'dropped')),
        commit_pos  TEXT,
        prepare_pos TEXT,
        failure     TEXT,
        updated_at  INTEGER NOT NULL,
        fingerprint TEXT,
        filters     TEXT,
        PRIMARY KEY (collection, generation)
      );
    `);
    // A file made before generations kept their schema gains the columns, once (in a transaction:
    // another process may be at it too). Looked at first without one, so an open takes no write lock
    // when they are there (a CLI's status beside a busy service).
    const hasSchemaColumns = () => db.prepare<[], string>("SELECT name FROM pragma_table_info('read_model_generations')").pluck().all().includes('fingerprint');
    if (!hasSchemaColumns()) {
      transactions(db).immediate(() => {
        if (!hasSchemaColumns())
          db.exec('ALTER TABLE read_model_generations ADD COLUMN fingerprint TEXT; ALTER TABLE read_model_generations ADD COLUMN filters TEXT;');
      });
    }
    this.all = db.prepare(`SELECT * FROM read_model_generations WHERE collection = ${TEXT_KEY} ORDER BY generation`);
    this.one = db.prepare('SELECT * FROM read_model_generations WHERE collection = ? AND generation = ?');
    this.live = db.prepare<[string], number>("SELECT generation FROM read_model_generations WHERE collection = ? AND state = 'live'").pluck();
    this.state = db.prepare<[string, number], string>('SELECT state FROM read_model_generations WHERE collection = ? AND generation = ?').pluck();
    this.selectInUse = db.prepare("SELECT generation, state FROM read_model_generations WHERE collection = ? AND state IN ('live', 'building')");
    this.saveCheckpoint = db.prepare(
      `UPDATE read_model_generations SET commit_pos = ?, prepare_pos = ?, failure = NULL, updated_at = ?
       WHERE collection = ? AND generation = ?`,
    );
    this.saveFailure = db.prepare('UPDATE read_model_generations SET failure = ?, updated_at = ? WHERE collection = ? AND generation = ?');
    this.setState = db.prepare('UPDATE read_model_generations SET state = ?, updated_at = ? WHERE collection = ? AND generation = ?');
    this.insertGeneration = db.prepare(
      'INSERT INTO read_model_generations (collection, generation, state, updated_at, fingerprint, filters) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.stampSchema = db.prepare(
      "UPDATE read_model_generations SET fingerprint = ?, filters = ? WHERE collection = ? AND state = 'live' AND fingerprint IS NULL",
    );
  }

  inUse(collection: string): InUse {
    return inUse(this.selectInUse.all(collection));
  }

  /** A new generation, built with `schema`. */
  insert(schema: CollectionSchema, generation: number, state: 'live' | 'building'): void {
    this.insertGeneration.run(schema.name, generation, state, Date.now(), ...schemaColumns(schema));
  }

  /** Takes a live generation made before generations kept their schema as built with `schema`. */
  stamp(schema: CollectionSchema): void {
    this.stampSchema.run(...schemaColumns(schema), schema.name);
  }

  saveCheckpointOf(collection: string, generation: number, position: Position): void {
    this.saveCheckpoint.run(position.commit.toString(), position.prepare.toString(), Date.now(), collection, generation);
  }

  saveFailureOf(collection: string, generation: number, failure: ProjectionFailure): void {
    this.saveFailure.run(JSON.stringify(failure), Date.now(), collection, generation);
  }

  setStateOf(collection: string, generation: number, state: GenerationRow['state'], now = Date.now()): void {
    this.setState.run(state, now, collection, generation);
  }
}

/** The schema a generation was built with, from its row (see generationSchema). */
export function schemaOf(current: CollectionSchema, row: GenerationRow | undefined): CollectionSchema {
  return generationSchema(current, row?.filters ? (JSON.parse(row.filters) as Record<string, MatchKind>) : null);
}

/** The fingerprint and filters a generation built with `schema` keeps. */
function schemaColumns(schema: CollectionSchema): [string, string] {
  return [schemaFingerprint(schema), JSON.stringify(schema.filters)];
}

export function inUse(rows: Pick<GenerationRow, 'generation' | 'state'>[]): InUse {
  return { live: rows.find((r) => r.state === 'live')?.generation ?? 0, building: rows.find((r) => r.state === 'building')?.generation ?? null };
}

export function positionOf(row: GenerationRow): Position | null {
  return row.commit_pos === null ? null : { commit: BigInt(row.commit_pos), prepare: BigInt(row.prepare_pos!) };
}

export function toStatus(row: GenerationRow): GenerationStatus {
  return {
    generation: row.generation,
    position: positionOf(row),
    failure: row.failure ? (JSON.parse(row.failure) as ProjectionFailure) : null,
    updatedAt: row.updated_at,
  };
}
