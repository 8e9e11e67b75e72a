import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { KEY_BYTES } from '../key-store/key-store.port';

/**
 * A batch for the thread: sealed values, the id of each one's event, and the keys, each once, in one
 * buffer (KEY_BYTES apiece) with the index of each value's key in it (-1: the key is gone). Or,
 * with `keyFile`, no keys but their ids (`keyIds`, each once, `keyOf` indexing them): the thread
 * reads them from that SQLite key store itself (see SqliteKeyStore), through a connection of its own.
 */
export interface OpenRequest {
  id: number;
  sealed: string[];
  contexts: string[];
  keyTable?: Uint8Array;
  keyOf: Int32Array;
  keyFile?: string;
  keyIds?: string[];
}

/**
 * A batch of new records' values to seal (a bulk import's): each record's key made (or found) in the
 * SQLite key store in `keyFile`, one durable transaction for the batch, then its value sealed with
 * it, `contexts[i]` (its event's id) bound in.
 */
export interface SealRequest {
  id: number;
  keyFile: string;
  /** The page cache of the thread's connection to `keyFile`, MiB (SQLite's default if none): a bulk import's inserts go to random places of the ids' index. */
  keyCacheMiB?: number;
  keyIds: string[];
  contexts: string[];
  plaintexts: string[];
}

/** Each value sealed, in order, or null where its record's key is destroyed (erased); `error`: the keys could not be made. */
export interface SealAnswer {
  id: number;
  sealed: (string | null)[];
  error?: string;
}

/**
 * Each sealed value opened, in order: its plaintext, or null where it does not open (its key
 * destroyed, too). Where the thread read the keys, `absent` names those the key store does not have
 * (not even a destroyed key's tombstone); their values are null. `error`: the keys could not be read.
 */
export interface OpenAnswer {
  id: number;
  opened: (string | null)[];
  absent?: string[];
  error?: string;
}

/** The thread's script, as built (dist/sealing/open-worker.js). */
const SCRIPT = join(__dirname, 'open-worker.js');

/**
 * A worker thread that opens sealed values, so that a rebuild or a catch-up decrypts one batch
 * while the main thread folds the one before it: opening (AES-GCM in node:crypto, most of it the
 * cipher's set-up) costs a fold as much as everything else does.
 *
 * Only where the service runs as built: run from its TypeScript sources (the in-process tests) there
 * is no script for the thread, and `available` is false.
 */
export class OpeningThread {
  static readonly available = existsSync(SCRIPT);
  private worker?: Worker;
  private closed = false;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (answer: OpenAnswer | SealAnswer) => void; reject: (error: unknown) => void }>();

  /** Whether the thread runs (started, not ended since): a batch sent now waits on no start-up. */
  get started(): boolean {
    return this.worker !== undefined;
  }

  /** Starts the thread, if it does not run, for batches to come: loading its script takes a while. */
  start(): void {
    if (!this.closed) this.worker ??= this.startWorker();
  }

  /** Opens each sealed value with its key (undefined: gone, and it opens as null). */
  open(sealed: string[], contexts: string[], keys: (Buffer | undefined)[]): Promise<(string | null)[]> {
    if (this.closed) return Promise.reject(new Error('The store is closed'));
    const index = new Map<Buffer, number>();
    const keyOf = new Int32Array(keys.length);
    keys.forEach((key, i) => {
      if (key && !index.has(key)) index.set(key, index.size);
      keyOf[i] = key ? index.get(key)! : -1;
    });
    // A buffer of its own: a slice of Node's shared pool would send the thread the whole pool.
    const keyTable = new Uint8Array(index.size * KEY_BYTES);
    for (const [key, k] of index) keyTable.set(key, k * KEY_BYTES);
    return this.ask({ sealed, contexts, keyTable, keyOf }).then((answer) => answer.opened);
  }

  /**
   * Opens each sealed value with the key of `keyIds[keyOf[i]]`, read by the thread from the SQLite
   * key store in `keyFile` (a connection of its own, read-only): the key store's reads and the
   * opening both off the caller's thread. `absent`: the ids the key store has no key for, not even
   * a destroyed one's tombstone; their values, like those of destroyed keys, are null.
   */
  async openReadingKeys(
    keyFile: string,
    sealed: string[],
    contexts: string[],
    keyIds: string[],
    keyOf: Int32Array,
  ): Promise<{ opened: (string | null)[]; absent: string[] }> {
    if (this.closed) throw new Error('The store is closed');
    const answer = await this.ask({ sealed, contexts, keyOf, keyFile, keyIds });
    if (answer.error !== undefined) throw new Error(`The thread opening sealed values could not read the keys: ${answer.error}`);
    return { opened: answer.opened, absent: answer.absent ?? [] };
  }

  /**
   * Seals each value with its record's key, made by the thread in the SQLite key store in `keyStore.file`
   * (a connection of its own, durable: the keys are on disk before this resolves), or found there:
   * the key store's inserts and the ciphers off the caller's thread. Null where the key is destroyed.
   */
  async sealMakingKeys(keyStore: { file: string; cacheMiB?: number }, keyIds: string[], contexts: string[], plaintexts: string[]): Promise<(string | null)[]> {
    if (this.closed) throw new Error('The store is closed');
    const answer = await this.ask({ keyFile: keyStore.file, keyCacheMiB: keyStore.cacheMiB, keyIds, contexts, plaintexts });
    if (answer.error !== undefined) throw new Error(`The thread sealing values could not make the keys: ${answer.error}`);
    return answer.sealed;
  }

  private ask(request: Omit<OpenRequest, 'id'>): Promise<OpenAnswer>;
  private ask(request: Omit<SealRequest, 'id'>): Promise<SealAnswer>;
  private ask(request: Omit<OpenRequest, 'id'> | Omit<SealRequest, 'id'>): Promise<OpenAnswer | SealAnswer> {
    this.start();
    const worker = this.worker!;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // Referenced while it has work: a CLI's rebuild waiting only on the thread must not exit.
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...request });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    // Referenced until it has ended (see started: an answer still arriving no longer unreferences
    // it). Else a CLI whose last wait is this one exits on the spot, with code 0, before its own
    // exit code is set: a rebuild's 130 on Ctrl-C.
    this.worker?.ref();
    await this.worker?.terminate();
  }

  private startWorker(): Worker {
    const worker = new Worker(SCRIPT);
    const settled = () => {
      if (this.waiting.size === 0 && !this.closed) worker.unref(); // idle, it keeps no process alive
    };
    worker.on('message', (answer: OpenAnswer | SealAnswer) => {
      const { id } = answer;
      this.waiting.get(id)?.resolve(answer);
      this.waiting.delete(id);
      settled();
    });
    // Whatever ends this thread fails what it was asked; the next batch starts another.
    const fail = (error: unknown) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      void worker.terminate();
      for (const { reject } of this.waiting.values()) reject(error);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('messageerror', fail);
    worker.on('exit', (code) => fail(new Error(`The thread opening sealed values ended (exit code ${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }
}
