import { LRUCache } from 'lru-cache';
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, KeyObject, randomUUID } from 'node:crypto';
import { RecordErasedError } from '../event-store/event-store.port';
import type { ErasureLog } from '../key-store/erasure-log';
import type { KeyStore } from '../key-store/key-store.port';
import { randomBytesPooled } from '../key-store/random-bytes';
import { outsideTraces } from '../tracing/tracing';

/** Keys kept in memory at most; rebuilds fetch theirs a batch at a time anyway. */
const KEYS_KEPT = 10_000;
/**
 * New records' ids whose keys are made ahead, per kind: a group of this many, started when fewer
 * than half are left. Half lasts 128 ms at 1,000 creates a second: a create waits for the key
 * store only when it answers slower than that, over 128 ms for a round trip (KEYS_MADE_AT_ONCE
 * keys), or over 32 ms for each of several in a row.
 */
export const SPARE_KEYS = 256;
/** Keys asked of the key store at once while making SPARE_KEYS: on MongoDB, one insert and one pooled connection each. */
export const KEYS_MADE_AT_ONCE = 32;
/**
 * The keys a group failed to make (the key store down, its disk full) are asked for again after
 * this long, then after twice as long each time they fail again, up to KEYS_RETRY_MOST_MS.
 */
export const KEYS_RETRY_FIRST_MS = 250;
const KEYS_RETRY_MOST_MS = 5_000;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A key as node:crypto takes it: a KeyObject, made for the work at hand and let go. On Node 24 a key
 * given as bytes costs each cipher or HMAC two brand checks that throw and catch (`isKeyObject`,
 * `isCryptoKey` in `prepareSecretKey`), which `createSecretKey` skips: a KeyObject per use costs a
 * third of that (on Node 22, about 2 µs more than the bytes). None is kept with the cached keys:
 * the cache turns over with every create, so each one would outlive the young generation and die in
 * the old one, where its native handles are freed in the pause of a major garbage collection
 * (thousands of them, the longest part of that pause). Work that uses a key many times (a read of a
 * record's events, a page of the sealing migration) makes its KeyObject once.
 */
export const keyObject = (key: Uint8Array | KeyObject): KeyObject => (key instanceof KeyObject ? key : createSecretKey(key));

/** Each key's KeyObject made once, at its first use (`bytesOf`: its bytes, or nothing where it is gone): for work that opens many values with few keys. */
export function keyObjectsOnce<K>(bytesOf: (k: K) => Uint8Array | null | undefined): (k: K) => KeyObject | undefined {
  const made = new Map<K, KeyObject | undefined>();
  return (k) => {
    if (!made.has(k)) {
      const bytes = bytesOf(k);
      made.set(k, bytes ? createSecretKey(bytes) : undefined);
    }
    return made.get(k);
  };
}

/**
 * AES-256-GCM: authenticated, so a sealed value moved to another event (`context`, the event's id)
 * or altered does not open. Sealed: base64 of iv | ciphertext | tag.
 */
export function seal(key: Uint8Array | KeyObject, plaintext: string, context: string): string {
  const iv = randomBytesPooled(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyObject(key), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
}

export function open(key: Uint8Array | KeyObject, sealed: string, context: string): string {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', keyObject(key), bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  const plaintext = decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)).toString('utf8');
  decipher.final(); // checks the tag; GCM has nothing left to give
  return plaintext;
}

/** A sealed value's plaintext; null when there is no key (erased), or the value was altered or sealed with another key. */
export function openOrNull(key: Uint8Array | KeyObject | undefined, sealed: string, context: string): string | null {
  if (!key) return null;
  try {
    return open(key, sealed, context);
  } catch {
    return null;
  }
}

/** A keyed digest: compares request bodies without keeping a guessable hash of their personal data. */
export const digest = (key: Uint8Array | KeyObject, text: string) => createHmac('sha256', keyObject(key)).update(text).digest('hex');

/** The Nest token of the app's DataKeys. */
export const DATA_KEYS = Symbol('DataKeys');

/**
 * The records' data keys, read through a cache of the most recently used ones, so a read or a write
 * does not go to the key store each time. Keys never change, so a cached key is right until its
 * record is erased; an erasure forgets it here, and other processes forget theirs when they read
 * the erasure event (every read path also goes by that event, so a stale key shows nothing).
 */
export class DataKeys {
  private readonly cache: LRUCache<string, Buffer>;
  /**
   * By key-id prefix: new records' ids with their keys, made and stored durably (see newRecordId).
   * Kept apart from the cache, which the reads of other records would push them out of.
   */
  private readonly spare = new Map<string, { id: string; key: Buffer }[]>();
  /** The prefixes whose group is being made, or waits to be tried again (see makeAhead). */
  private readonly refilling = new Set<string>();
  private readonly retries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    readonly store: KeyStore,
    keepAtMost = KEYS_KEPT,
    /** Where the erasures asked are kept, apart from the stores (none: the CLI's, which erases nothing). */
    private readonly erasureLog?: ErasureLog,
  ) {
    this.cache = new LRUCache({ max: keepAtMost });
  }

  /** The record's key, made if it has none (`isNew`: see KeyStore.obtain). RecordErasedError once it is destroyed. */
  async forWriting(keyId: string, { isNew = false } = {}): Promise<Buffer> {
    const cached = this.cache.get(keyId);
    if (cached) return cached;
    const key = await this.store.obtain(keyId, { isNew });
    if (!key) throw new RecordErasedError(keyId);
    this.keep(keyId, key);
    return key;
  }

  /**
   * An id for a new record, its key (`keyIdPrefix` + id) already made, on disk and cached: a create
   * then waits for no key store write of its own. The keys are made ahead in groups of SPARE_KEYS,
   * KEYS_MADE_AT_ONCE at a time (each one transaction and one sync on SQLite), in the background.
   * With none ready (the first create, or a key store failing), the key is made at once, as
   * without this. Ids made ahead and never used (fewer than 1.5 × SPARE_KEYS per kind when the
   * process stops) leave keys that no record uses: random bytes, nothing personal.
   */
  async newRecordId(keyIdPrefix: string): Promise<string> {
    let spare = this.spare.get(keyIdPrefix);
    if (!spare) this.spare.set(keyIdPrefix, (spare = []));
    // Not part of the request that sets it off: its trace shows no key it does not use.
    if (spare.length < SPARE_KEYS / 2 && !this.refilling.has(keyIdPrefix)) void outsideTraces(() => this.makeAhead(keyIdPrefix, spare));
    const ready = spare.pop();
    if (ready) {
      this.keep(keyIdPrefix + ready.id, ready.key);
      return ready.id;
    }
    const id = randomUUID();
    await this.forWriting(keyIdPrefix + id, { isNew: true });
    return id;
  }

  /**
   * Makes `wanted` keys for new ids, KEYS_MADE_AT_ONCE at a time. Should some fail, the group stops
   * there, and the keys it still wants are asked for again by themselves, after a pause that grows
   * while they go on failing, rather than at the next create: until a write to the key store
   * succeeds, readiness says its writes fail (on every worker, which tell one another), and the
   * worker whose group failed may take no create for a while. Creates meanwhile take the keys
   * left, then make their own.
   */
  private async makeAhead(keyIdPrefix: string, spare: { id: string; key: Buffer }[], wanted = SPARE_KEYS, retryMs = KEYS_RETRY_FIRST_MS): Promise<void> {
    this.refilling.add(keyIdPrefix);
    let failed = false;
    try {
      while (wanted > 0 && !failed && !this.closed) {
        const ids = Array.from({ length: Math.min(KEYS_MADE_AT_ONCE, wanted) }, () => randomUUID());
        // Settled, every one: a key made is handed out even when others failed, and no call is left running.
        const keys = await Promise.allSettled(ids.map((id) => this.store.obtain(keyIdPrefix + id, { isNew: true })));
        ids.forEach((id, i) => {
          const key = keys[i];
          // Null: destroyed, so not a new id after all.
          if (key.status === 'fulfilled' && key.value) spare.push({ id, key: key.value });
        });
        // Nothing to report here: a create finding none ready makes its own key and meets the failure itself.
        const failures = keys.filter((key) => key.status === 'rejected').length;
        wanted -= ids.length - failures;
        failed = failures > 0;
      }
    } finally {
      if (failed && !this.closed) {
        const retry = setTimeout(() => {
          this.retries.delete(retry);
          void outsideTraces(() => this.makeAhead(keyIdPrefix, spare, wanted, Math.min(2 * retryMs, KEYS_RETRY_MOST_MS)));
        }, retryMs).unref();
        this.retries.add(retry);
      } else {
        this.refilling.delete(keyIdPrefix);
      }
    }
  }

  /**
   * The keys of these records: null for a destroyed one, and absent where the key store has none
   * (see KeyStore.getMany). Keys fetched are kept unless `keep` is false: a subscription's batches
   * (a rebuild reads every record once) would only push out the keys that requests use.
   */
  async forReading(keyIds: Iterable<string>, { keep = true } = {}): Promise<Map<string, Buffer | null>> {
    const found = new Map<string, Buffer | null>();
    const missing: string[] = [];
    for (const keyId of keyIds) {
      const cached = this.cache.get(keyId);
      if (cached) found.set(keyId, cached);
      else missing.push(keyId);
    }
    for (const [keyId, key] of await this.store.getMany(missing)) {
      found.set(keyId, key);
      if (key && keep) this.keep(keyId, key);
    }
    return found;
  }

  /**
   * The record's key as the key store has it now, past this cache: for a read that goes by the key
   * alone, with no erasure event to tell it (an Idempotency-Key replay), since another instance
   * may have destroyed it since this one cached it. null once destroyed; undefined where the key
   * store has none (see KeyStore.getMany).
   */
  async current(keyId: string): Promise<Buffer | null | undefined> {
    const key = (await this.store.getMany([keyId])).get(keyId);
    if (!key) this.forget(keyId);
    return key;
  }

  /**
   * Which of these keys are destroyed, as the key store has them now: past this cache, since another
   * instance may have destroyed one since this one cached it.
   */
  async destroyedAmong(keyIds: string[]): Promise<Set<string>> {
    if (keyIds.length === 0) return new Set();
    const destroyed = await this.store.destroyedAmong(keyIds);
    for (const keyId of destroyed) this.forget(keyId);
    return destroyed;
  }

  /** Stops the groups' retries, then closes the key store. */
  async close(): Promise<void> {
    this.closed = true;
    for (const retry of this.retries) clearTimeout(retry);
    await this.store.close();
  }

  /**
   * An erasure asked, kept in the erasure log (on disk when this resolves) before its key is
   * destroyed: a restore from before it erases again, and so does the next start should the
   * destroy fail.
   */
  async logErasure(keyId: string, erasedBy: string): Promise<void> {
    await this.erasureLog?.append({ key: keyId, account: erasedBy, at: new Date().toISOString() });
  }

  async destroy(keyId: string, erasedBy: string): Promise<void> {
    this.forget(keyId);
    await this.store.destroy(keyId, erasedBy);
  }

  private keep(keyId: string, key: Buffer): void {
    this.cache.set(keyId, key);
  }

  forget(keyId: string): void {
    // Not zeroed: a write under way may still hold this very buffer, and must not seal with zeros.
    this.cache.delete(keyId);
  }
}
