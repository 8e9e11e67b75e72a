import type { Statement } from 'better-sqlite3';
import { SqliteDatabase } from '../storage/sqlite-database';
import { laterRequest, parkedFromJson, parkedToJson, parkInto } from './generation-rules';
import { type ParkedChanges, type ParkedStream, ParkedStreamMovedError, type ParkRequest, type SkippedEvent } from './read-store.port';

/**
 * The SQLite read store's parked streams, per collection generation: one row per parked stream (its
 * state as JSON), one per skipped event, and a request stamp per generation. Written inside the
 * commit's transaction (apply), so documents, parked streams and checkpoint go in together.
 */
export class SqliteParked {
  private readonly select: Statement<[string, number, string], string>;
  private readonly selectAll: Statement<[string, number, number], string>;
  private readonly upsert: Statement;
  private readonly remove: Statement;
  private readonly insertSkip: Statement;
  private readonly selectSkips: Statement<[string], { generation: number; record: string }>;
  private readonly countAll: Statement<[string, number], { streams: number; waiting: number | null }>;
  private readonly bump: Statement;
  private readonly dropAll: Statement[];
  private readonly stamp: Statement<[string, number], number>;

  constructor(private readonly db: SqliteDatabase) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS read_model_parked (
        collection TEXT    NOT NULL,
        generation INTEGER NOT NULL,
        stream_id  TEXT    NOT NULL,
        parked_at  INTEGER NOT NULL,
        waiting    INTEGER NOT NULL,
        state      TEXT    NOT NULL,
        PRIMARY KEY (collection, generation, stream_id)
      );
      CREATE TABLE IF NOT EXISTS read_model_skipped (
        collection TEXT    NOT NULL,
        generation INTEGER NOT NULL,
        stream_id  TEXT    NOT NULL,
        revision   INTEGER NOT NULL,
        at         INTEGER NOT NULL,
        record     TEXT    NOT NULL,
        PRIMARY KEY (collection, generation, stream_id, revision)
      );
      CREATE TABLE IF NOT EXISTS read_model_parked_requests (
        collection TEXT    NOT NULL,
        generation INTEGER NOT NULL,
        stamp      INTEGER NOT NULL,
        PRIMARY KEY (collection, generation)
      );
    `);
    this.select = db
      .prepare<[string, number, string], string>('SELECT state FROM read_model_parked WHERE collection = ? AND generation = ? AND stream_id = ?')
      .pluck();
    this.selectAll = db
      .prepare<[string, number, number], string>(
        'SELECT state FROM read_model_parked WHERE collection = ? AND generation = ? ORDER BY parked_at, stream_id LIMIT ?',
      )
      .pluck();
    this.upsert = db.prepare(
      `INSERT INTO read_model_parked (collection, generation, stream_id, parked_at, waiting, state) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (collection, generation, stream_id) DO UPDATE SET parked_at = excluded.parked_at, waiting = excluded.waiting, state = excluded.state`,
    );
    this.remove = db.prepare('DELETE FROM read_model_parked WHERE collection = ? AND generation = ? AND stream_id = ?');
    this.insertSkip = db.prepare(
      'INSERT OR IGNORE INTO read_model_skipped (collection, generation, stream_id, revision, at, record) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.selectSkips = db.prepare<[string], { generation: number; record: string }>(
      'SELECT generation, record FROM read_model_skipped WHERE collection = ? ORDER BY at, stream_id',
    );
    this.countAll = db.prepare('SELECT count(*) AS streams, sum(waiting) AS waiting FROM read_model_parked WHERE collection = ? AND generation = ?');
    this.bump = db.prepare(
      `INSERT INTO read_model_parked_requests (collection, generation, stamp) VALUES (?, ?, 1)
       ON CONFLICT (collection, generation) DO UPDATE SET stamp = stamp + 1`,
    );
    // Skips are kept: the record of who skipped what outlives the generation.
    this.dropAll = ['read_model_parked', 'read_model_parked_requests'].map((t) => db.prepare(`DELETE FROM ${t} WHERE collection = ? AND generation = ?`));
    this.stamp = db.prepare<[string, number], number>('SELECT stamp FROM read_model_parked_requests WHERE collection = ? AND generation = ?').pluck();
  }

  /** Applies a commit's changes; to be called inside its transaction. */
  apply(collection: string, generation: number, changes: ParkedChanges, now = Date.now()): void {
    for (const { streamId, ...event } of changes.parked ?? []) {
      const next = parkInto(this.get(collection, generation, streamId), streamId, event, now);
      if (next) this.put(collection, generation, next);
    }
    for (const { streamId, now: stream, seen } of changes.settled ?? []) {
      const stored = this.get(collection, generation, streamId);
      if (stored?.lastRevision !== seen.lastRevision) throw new ParkedStreamMovedError(streamId);
      if (stream) this.put(collection, generation, { ...stream, request: laterRequest(stored, seen) });
      else this.remove.run(collection, generation, streamId);
    }
    for (const skip of changes.skipped ?? []) this.insertSkip.run(collection, generation, skip.streamId, skip.revision, skip.at, parkedToJson(skip));
  }

  /** What a dropped generation had parked goes with it (its skips stay); to be called inside its transaction. */
  drop(collection: string, generation: number): void {
    for (const statement of this.dropAll) statement.run(collection, generation);
  }

  list(collection: string, generation: number, limit = -1): ParkedStream[] {
    return this.selectAll.all(collection, generation, limit).map((json) => parkedFromJson<ParkedStream>(json));
  }

  count(collection: string, generation: number): { streams: number; events: number } {
    const { streams, waiting } = this.countAll.get(collection, generation)!;
    return { streams, events: streams + (waiting ?? 0) };
  }

  request(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): string[] {
    const streams = streamIds === 'all' ? this.list(collection, generation) : streamIds.flatMap((id) => this.get(collection, generation, id) ?? []);
    for (const stream of streams) this.put(collection, generation, { ...stream, request });
    this.bump.run(collection, generation);
    return streams.map((s) => s.streamId);
  }

  requests(collection: string, generation: number): number {
    return this.stamp.get(collection, generation) ?? 0;
  }

  skipped(collection: string): (SkippedEvent & { generation: number })[] {
    return this.selectSkips.all(collection).map(({ generation, record }) => ({ ...parkedFromJson<SkippedEvent>(record), generation }));
  }

  private get(collection: string, generation: number, streamId: string): ParkedStream | null {
    const json = this.select.get(collection, generation, streamId);
    return json === undefined ? null : parkedFromJson<ParkedStream>(json);
  }

  private put(collection: string, generation: number, stream: ParkedStream): void {
    this.upsert.run(collection, generation, stream.streamId, stream.parkedAt, stream.waiting, parkedToJson(stream));
  }
}
