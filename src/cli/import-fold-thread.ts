import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { START, type EventStore, type Position } from '../event-store/event-store.port';

/**
 * From the parent: the values of events about to be appended (by event id, as sealed: plainValues);
 * stop (the import was interrupted), or the import is over (the fold catches up, promotes, ends).
 */
export type FoldOrder = { values: [string, string][] } | { end: 'interrupted' | 'finished' };
/** From the thread: whether it took the leases and folds; how far it has folded; that its generations are live; an error that ended it. */
export type FoldReport = { started: boolean } | { done: number; failed: boolean } | { live: true } | { error: string };

/** The thread's script, as built (dist/cli/import-fold-worker.js). */
const SCRIPT = join(__dirname, 'import-fold-worker.js');

/** The thread's old generation at most: its live set is some 40 MiB (the batches read ahead and folded). */
const HEAP_MIB = 160;

/**
 * Events an import may have appended ahead of its fold before it waits: with the batches in flight,
 * under the values the fold's sealed store keeps (APPENDED_KEPT).
 */
const AHEAD_MOST = 20_000;

/**
 * The fold alongside a large import (FoldAlongside) in a worker thread of its own, with its own
 * connections to the stores: it reads the rows back as they are appended and folds them on the
 * second core while the import's thread checks, seals and appends the next ones. It is sent each
 * batch's values, as sealed, so it opens nothing (a cipher per record). Only where the command
 * runs as built (not from its TypeScript sources, where there is no script).
 */
export class FoldThread {
  static readonly available = existsSync(SCRIPT);
  private done = 0;
  private failed = false;
  /** Told to end (close): its exit is no failure. */
  private closing = false;
  private progressed?: () => void;
  private live!: Promise<void>;
  private ended!: Promise<void>;

  private constructor(
    private readonly worker: Worker,
    private readonly eventStore: EventStore,
  ) {}

  /** The fold, started in its thread, if it could take every read model's lease (else none: the fold at the end folds). */
  static async start(
    eventStore: EventStore,
    { cacheMiB, instanceId }: { cacheMiB: number; instanceId: string },
    signal: AbortSignal,
  ): Promise<FoldThread | undefined> {
    // Its heap bounded: V8 would let it grow to hundreds of MiB of garbage before collecting (a few tens live).
    const worker = new Worker(SCRIPT, {
      workerData: { cacheMiB, instanceId },
      resourceLimits: { maxOldGenerationSizeMb: HEAP_MIB, maxYoungGenerationSizeMb: 32 },
    });
    const fold = new FoldThread(worker, eventStore);
    let onStarted!: (started: boolean) => void;
    const started = new Promise<boolean>((resolve) => (onStarted = resolve));
    let onLive!: () => void;
    fold.live = new Promise<void>((resolve) => (onLive = resolve));
    const failed = (message: string) => {
      if (!fold.failed && !signal.aborted) process.stderr.write(`Folding the rows as they came failed (${message}): the read models are folded at the end\n`);
      fold.failed = true;
      fold.progressed?.();
      onStarted(false);
      onLive();
    };
    worker.on('message', (report: FoldReport) => {
      if ('started' in report) onStarted(report.started);
      else if ('done' in report) {
        fold.done = report.done;
        fold.failed ||= report.failed;
        fold.progressed?.();
      } else if ('live' in report) onLive();
      else failed(report.error);
    });
    fold.ended = new Promise<void>((resolve) => {
      worker.on('error', (error) => failed(error.message));
      worker.on('exit', (code) => {
        if (!fold.closing) failed(`the thread ended, exit code ${code}`);
        resolve();
      });
    });
    const interrupt = () => worker.postMessage({ end: 'interrupted' } satisfies FoldOrder);
    signal.addEventListener('abort', interrupt, { once: true });
    void fold.ended.then(() => signal.removeEventListener('abort', interrupt));
    if (await started) return fold;
    await fold.ended;
    return undefined;
  }

  /** The values of a batch's events, before they are appended. */
  values(values: [string, string][]): void {
    this.worker.postMessage({ values } satisfies FoldOrder);
  }

  /** Waits while the fold is more than AHEAD_MOST events behind `appended` (the import's last append). */
  async keepUp(appended: Position): Promise<void> {
    const behind = () => (this.eventStore.eventsBetween(START, appended) ?? 0) - this.done;
    while (!this.failed && behind() > AHEAD_MOST) await new Promise<void>((resolve) => (this.progressed = resolve));
  }

  /** The import is over: the fold catches up with the head and promotes its generations. */
  async finish(): Promise<void> {
    this.worker.postMessage({ end: 'finished' } satisfies FoldOrder);
    await this.live;
  }

  /** Once the thread has ended (the replaced generations dropped, its stores closed). */
  async close(): Promise<void> {
    this.closing = true;
    this.worker.postMessage({ end: 'finished' } satisfies FoldOrder);
    await this.ended;
  }
}
