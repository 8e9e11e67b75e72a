/**
 * The key store port: one data key per record, kept apart from the events it encrypts. Destroying a
 * record's key is its erasure: its events stay, readable as events, unreadable as data.
 * Adapters: SQLite (its own file beside the embedded store) and MongoDB.
 */

/** A data key's length: AES-256. */
export const KEY_BYTES = 32;

/** An erasure whose key is destroyed but whose remaining steps may not have run (see RecordEraser). */
export interface PendingErasure {
  keyId: string;
  /** The account that asked for it: the actor of the erasure event. */
  erasedBy: string;
}

export interface KeyStore {
  /** Which store keeps the keys, for errors that name it. */
  readonly name: 'MongoDB' | 'SQLite';
  /** The SQLite file the keys are in, which a thread may read a large batch of keys from itself; none on a server or in memory. */
  readonly file?: string;
  /**
   * The key of `keyId`, made (32 random bytes) and stored durably first if it has none; null if it
   * was destroyed (a destroyed key is never made again).
   *
   * `isNew`: the record has no events yet, so its key is most likely not there: made without
   * looking for it first (a retried create still gets the key it made before).
   */
  obtain(keyId: string, options?: { isNew?: boolean }): Promise<Buffer | null>;
  /**
   * Keys by id: a Buffer, or null when destroyed (a destroyed key leaves a tombstone for good, so
   * that a record erased is never taken for one whose key is not there yet). An id whose key this
   * read does not find (never made, or not yet visible to it) is absent.
   */
  getMany(keyIds: string[]): Promise<Map<string, Buffer | null>>;
  /**
   * Those of these ids whose key is destroyed. What every read and list asks of the records it
   * shows: no key is read, so it costs a fraction of getMany.
   */
  destroyedAmong(keyIds: string[]): Promise<Set<string>>;
  /**
   * Destroys the key for good, so that no page, freed page or journal of the store still holds it
   * when this resolves, and keeps the erasure pending until finishErasure. Idempotent.
   */
  destroy(keyId: string, erasedBy: string): Promise<void>;
  /** Erasures destroyed but not finished: a restart finishes them. Those of ids starting with `prefix`. */
  pendingErasures(prefix: string): Promise<PendingErasure[]>;
  finishErasure(keyId: string): Promise<void>;
  /**
   * Makes a destroyed key's erasure pending again, for the next start to finish: a restore whose
   * events were copied before the erasure's event was appended. Nothing for a key not destroyed.
   */
  reopenErasure(keyId: string, erasedBy: string): Promise<void>;
  close(): Promise<void>;
}

export const KEY_STORE = Symbol('KeyStore');
