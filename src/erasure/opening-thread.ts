import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { KEY_BYTES } from './data-keys';

/**
 * A batch for the thread: sealed values, the id of each one's event, and the keys, each once, in one
 * buffer (KEY_BYTES apiece) with the index of each value's key in it (-1: the key is gone).
 */
export interface OpenRequest {
  id: number;
  sealed: string[];
  contexts: string[];
  keyTable: Uint8Array;
  keyOf: Int32Array;
}

/** Each sealed value opened, in order: its plaintext, or null where it does not open. */
export interface OpenAnswer {
  id: number;
  opened: (string | null)[];
}

/** The thread's script, as built (dist/erasure/open-worker.js). */
const SCRIPT = join(__dirname, 'open-worker.js');

/**
 * A worker thread that opens sealed values, so that a rebuild or a catch-up decrypts one batch
 * while the main thread folds the one before it: opening (AES-GCM in node:crypto, with each key's
 * raw bytes: 4–5 µs a value on Node 20, about 20 on Node 24, most of it the cipher's set-up) costs a
 * fold as much as everything else does.
 *
 * Only where the service runs as built: run from its TypeScript sources (the in-process tests) there
 * is no script for the thread, and `available` is false.
 */
export class OpeningThread {
  static readonly available = existsSync(SCRIPT);
  private worker?: Worker;
  private closed = false;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (opened: (string | null)[]) => void; reject: (error: unknown) => void }>();

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
    const worker = this.started();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // Referenced while it has work: a CLI's rebuild waiting only on the thread must not exit.
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, sealed, contexts, keyTable, keyOf } satisfies OpenRequest);
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

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SCRIPT);
    const settled = () => {
      if (this.waiting.size === 0 && !this.closed) worker.unref(); // idle, it keeps no process alive
    };
    worker.on('message', ({ id, opened }: OpenAnswer) => {
      this.waiting.get(id)?.resolve(opened);
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
