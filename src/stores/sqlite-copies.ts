import { Database } from '../storage/sqlite-database';

// The backup's copies of the embedded store's SQLite files, and the checks a restore makes of them.
// The SQL names the adapters' tables (events: sqlite-event-store.ts; data_keys: sqlite-key-store.ts).

/**
 * Copies a SQLite file that other processes keep writing into `target`, as it was at one instant:
 * VACUUM INTO runs in one read transaction, so the copy is one snapshot of the file (with WAL,
 * the writers go on meanwhile), and it leaves out free pages, which hold nothing then. Returns the
 * time the snapshot was taken, just before the statement began.
 */
export function snapshotSqlite(source: string, target: string): Date {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // VACUUM INTO builds the copy's pages with this connection's setting: without it, a page split
    // leaves bytes of the rows it moved in the unused part of a page, where a later erasure in a
    // restored copy would not reach them.
    db.pragma('secure_delete = ON');
    const at = new Date();
    db.prepare('VACUUM INTO ?').run(target);
    return at;
  } finally {
    db.close();
  }
}

/** The event store's head in a copy of the embedded store: its last event's position, "0" when it has none. */
export function headOfCopy(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare('SELECT max(global_position) AS head FROM events').get() as { head: number | null } | undefined;
    return String(row?.head ?? 0);
  } finally {
    db.close();
  }
}

/**
 * The records (streams of the given prefixes, `customer-`, …) that have events in the events copy
 * and no key, nor a destroyed key's tombstone, in the keys copy: a key store copied before those
 * events. `count` of them, and a few to name.
 */
export function recordsWithoutKeys(eventsFile: string, keysFile: string, prefixes: string[]): { count: number; some: string[] } {
  const db = new Database(eventsFile, { readonly: true, fileMustExist: true });
  try {
    // Attached as the connection opened its file: read-only.
    db.prepare('ATTACH DATABASE ? AS copied_keys').run(keysFile);
    const rows = db
      .prepare(
        `SELECT DISTINCT e.stream_id AS stream FROM events e
         WHERE EXISTS (SELECT 1 FROM json_each(?) p WHERE substr(e.stream_id, 1, length(p.value)) = p.value)
           AND NOT EXISTS (SELECT 1 FROM copied_keys.data_keys k WHERE k.key_id = e.stream_id)`,
      )
      .pluck()
      .all(JSON.stringify(prefixes)) as string[];
    return { count: rows.length, some: rows.slice(0, 3) };
  } finally {
    db.close();
  }
}
