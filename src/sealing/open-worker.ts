// The script of OpeningThread's worker: opens each batch it is sent and answers with the plaintexts,
// or seals a batch of new records' values, their keys made first (SealRequest).
import type { Statement } from 'better-sqlite3';
import { parentPort } from 'node:worker_threads';
import { Database, SqliteDatabase } from '../storage/sqlite-database';
import { KEY_BYTES } from '../key-store/key-store.port';
import { randomBytesPooled } from '../key-store/random-bytes';
import { keyObject, keyObjectsOnce, openOrNull, seal } from './data-keys';
import type { OpenAnswer, OpenRequest, SealAnswer, SealRequest } from './opening-thread';

/** Keys read at once: json_each takes any number, but the rows of one read are held together. */
const KEYS_A_READ = 1000;

/** The SQLite key store this thread reads (OpenRequest.keyFile): one file a thread, opened once. */
let keyStore:
  | {
      file: string;
      db: SqliteDatabase;
      /** The rowid after the last key read: where the next read's keys are likely to start (see readKeys). */
      next: number;
      byId: Statement<[string], KeyRow>;
      following: Statement<[number, number, string], KeyRow>;
    }
  | undefined;

interface KeyRow {
  rowid: number;
  key_id: string;
  key: Buffer | null;
}

parentPort!.on('message', (request: OpenRequest | SealRequest) => {
  if ('plaintexts' in request) return sealBatch(request);
  const { id, sealed, contexts, keyOf } = request;
  let absent: string[] | undefined;
  let keyBytes: (k: number) => Uint8Array | null;
  if (request.keyFile !== undefined) {
    let read: { bytes: (Buffer | null)[]; absent: string[] };
    try {
      read = readKeys(request.keyFile, request.keyIds!);
    } catch (error) {
      return parentPort!.postMessage({ id, opened: [], error: (error as Error).message } satisfies OpenAnswer);
    }
    absent = read.absent;
    keyBytes = (k) => read.bytes[k];
  } else {
    const table = request.keyTable!;
    keyBytes = (k) => table.subarray(k * KEY_BYTES, (k + 1) * KEY_BYTES);
  }
  // Each key of the batch made a KeyObject once (see keyObject in data-keys.ts), even for a key
  // that opens one value only (as in a rebuild, where most records have one event).
  const keyAt = keyObjectsOnce((k: number) => (k < 0 ? null : keyBytes(k)));
  const opened = sealed.map((value, i) => openOrNull(keyAt(keyOf[i]), value, contexts[i]));
  parentPort!.postMessage({ id, opened, ...(absent ? { absent } : {}) } satisfies OpenAnswer);
});

/**
 * The keys of `keyIds` as the key store has them now, in order: bytes, or null where destroyed or
 * absent; `absent` names the ids it has no row for. Read from `data_keys` as SqliteKeyStore makes it,
 * through a read-only connection of this thread's own: WAL lets it read beside the store's writer.
 *
 * A record's key is made with its first event, so the keys of a batch's new records follow one
 * another in the table's rowid order, as their events do in the log. Each read first takes the
 * rows that follow the last key found (`next`), as many as it asks for, and looks up by id only
 * those not among them. Looked up by id, each key costs a page of the id index read at random,
 * while the rows that follow one another share their pages.
 */
function readKeys(file: string, keyIds: string[]): { bytes: (Buffer | null)[]; absent: string[] } {
  if (keyStore?.file !== file) {
    keyStore?.db.close();
    keyStore = undefined;
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      // A small page cache: the pages it keeps hold keys, some of them destroyed since (freed, not zeroed).
      db.pragma('cache_size = -256');
      keyStore = {
        file,
        db,
        next: 1,
        byId: db.prepare('SELECT rowid, key_id, key FROM data_keys WHERE key_id IN (SELECT value FROM json_each(?))'),
        // `+key_id`: the rows in rowid order, the ids only tested (not looked up in their index).
        following: db.prepare('SELECT rowid, key_id, key FROM data_keys WHERE rowid >= ? AND rowid < ? AND +key_id IN (SELECT value FROM json_each(?))'),
      };
    } catch (error) {
      db.close();
      throw error;
    }
  }
  const store = keyStore;
  const found = new Map<string, Buffer | null>();
  for (let from = 0; from < keyIds.length; from += KEYS_A_READ) {
    const ids = keyIds.slice(from, from + KEYS_A_READ);
    let last = 0;
    const take = (row: KeyRow) => {
      found.set(row.key_id, row.key);
      if (row.rowid > last) last = row.rowid;
    };
    for (const row of store.following.all(store.next, store.next + ids.length, JSON.stringify(ids))) take(row);
    const rest = ids.filter((keyId) => !found.has(keyId));
    if (rest.length > 0) for (const row of store.byId.all(JSON.stringify(rest))) take(row);
    if (last > 0) store.next = last + 1;
  }
  const absent = keyIds.filter((keyId) => !found.has(keyId));
  return { bytes: keyIds.map((keyId) => found.get(keyId) ?? null), absent };
}

/** The SQLite key store this thread makes keys in (SealRequest.keyFile): one file a thread, opened once, durable. */
let keyMaker: { file: string; make: (keyIds: string[]) => (Buffer | null)[] } | undefined;

function sealBatch({ id, keyFile, keyCacheMiB, keyIds, contexts, plaintexts }: SealRequest): void {
  let keys: (Buffer | null)[];
  try {
    keys = makeKeys(keyFile, keyCacheMiB, keyIds);
  } catch (error) {
    return parentPort!.postMessage({ id, sealed: [], error: (error as Error).message } satisfies SealAnswer);
  }
  const sealed = plaintexts.map((plaintext, i) => {
    const key = keys[i];
    return key ? seal(keyObject(key), plaintext, contexts[i]) : null;
  });
  parentPort!.postMessage({ id, sealed } satisfies SealAnswer);
}

/**
 * Each id's key, as the SQLite key store's keyMaking makes it (the same statements, the same
 * settings: durable, zeroing what is deleted; written again here, since sealing may not load an
 * adapter), in one transaction, committed and synced before this returns: made, or the key it has,
 * or null where destroyed. In the order asked, the records' order, as the key store makes them.
 */
function makeKeys(file: string, cacheMiB: number | undefined, keyIds: string[]): (Buffer | null)[] {
  if (keyMaker?.file !== file) {
    const db = new Database(file, { fileMustExist: true });
    db.pragma('busy_timeout = 60000');
    db.pragma('synchronous = FULL');
    db.pragma('secure_delete = ON');
    // As a bulk import's connections (cli/import.ts): the inserts go to random places of the ids' index.
    if (cacheMiB) db.pragma(`cache_size = -${cacheMiB * 1024}`);
    const insert = db.prepare<[string, Buffer]>('INSERT INTO data_keys (key_id, key) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING');
    const select = db.prepare<[string], { key: Buffer | null }>('SELECT key FROM data_keys WHERE key_id = ?');
    const make = db.transaction((ids: string[]) =>
      ids.map((keyId) => {
        const key = randomBytesPooled(KEY_BYTES);
        return insert.run(keyId, key).changes === 1 ? key : select.get(keyId)!.key;
      }),
    );
    keyMaker = { file, make: (ids) => make.immediate(ids) };
  }
  return keyMaker.make(keyIds);
}
