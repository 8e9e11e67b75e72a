import type { Statement } from 'better-sqlite3';
import type { SqliteDatabase } from '../storage/sqlite-database';
import type { ReadLeases } from './read-store.port';

/** The projectors' leases in the SQLite file, one row each; expiry by the one machine's clock. */
export class SqliteReadLeases implements ReadLeases {
  private readonly takeLease: Statement;
  private readonly dropLease: Statement;
  private readonly selectLeaseHolder: Statement<[string], string>;

  constructor(db: SqliteDatabase) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS read_model_leases (
        name       TEXT    PRIMARY KEY,
        holder     TEXT    NOT NULL,
        expires_at INTEGER NOT NULL
      );
    `);
    // One statement, so taking a lease and checking it is free cannot interleave with another process.
    this.takeLease = db.prepare(
      `INSERT INTO read_model_leases (name, holder, expires_at) VALUES (@name, @holder, @expires)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE read_model_leases.holder IN (excluded.holder, @replacing) OR read_model_leases.expires_at <= @now`,
    );
    this.selectLeaseHolder = db.prepare<[string], string>('SELECT holder FROM read_model_leases WHERE name = ?').pluck();
    this.dropLease = db.prepare('DELETE FROM read_model_leases WHERE name = ? AND holder = ?');
  }

  async acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    const now = Date.now();
    const taken = this.takeLease.run({ name, holder, expires: now + ttlMs, now, replacing: replacing ?? null }).changes === 1;
    return taken ? holder : (this.selectLeaseHolder.get(name) ?? '');
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.dropLease.run(name, holder);
  }
}
