import { siblings } from '../instance';
import { StoreFullError, StoreUnavailableError } from './store-unavailable.error';

/**
 * How long a failed write keeps the instance not ready when no write has succeeded since. Bounded:
 * readiness takes the instance out of traffic, so no write may come to clear it; it is ready again
 * to try, and the next failed write takes it out again.
 */
export const WRITE_FAILURE_REMEMBERED_MS = 30_000;

/** The stores whose writes are watched, as readiness names them. */
export type WrittenStore = 'event store' | 'read store' | 'key store';

interface Failure {
  full: boolean;
  at: number;
}

/**
 * The stores whose last write failed for want of the store (down, or its disk full), for
 * /health/ready: a write that succeeds clears its store, and a failure is forgotten after
 * WRITE_FAILURE_REMEMBERED_MS. One entry per store, whatever the number of failures.
 *
 * The workers of one WORKERS=N service share their store and disk: each tells the others (sibling
 * news) when its store's writes start failing (again every half of the memory while they go on
 * failing) and when a write succeeds again, so that any worker a probe reaches answers alike.
 * Instances on other machines learn it from their own writes, as they learn of a server down.
 */
export class WriteFailures {
  private readonly failing = new Map<WrittenStore, Failure>();
  /** When this worker last told the others of each store's failures. */
  private readonly told = new Map<WrittenStore, number>();
  private readonly unhear: (() => void)[];

  constructor() {
    this.unhear = [
      siblings.hear('write-failed', ([store, full]) => this.failing.set(store as WrittenStore, { full: full === 'full', at: Date.now() })),
      // Told that writes succeed again: this worker's next failure is news again, whenever it comes.
      siblings.hear('wrote', ([store]) => (this.failing.delete(store as WrittenStore), this.told.delete(store as WrittenStore))),
    ];
  }

  /** Runs a write to `store`, noting its outcome: only a store unavailable counts as failing, not a refusal (a conflict, a stale revision). */
  async watch<T>(store: WrittenStore, write: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await write();
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.failed(store, error instanceof StoreFullError);
      throw error;
    }
    if (this.failing.delete(store)) {
      this.told.delete(store);
      siblings.tell('wrote', [store]);
    }
    return result;
  }

  /** The stores failing now, and whether for want of disk space. */
  current(now = Date.now()): { store: WrittenStore; full: boolean; secondsAgo: number }[] {
    const failures = [];
    for (const [store, { full, at }] of this.failing) {
      if (now - at >= WRITE_FAILURE_REMEMBERED_MS) this.failing.delete(store);
      else failures.push({ store, full, secondsAgo: Math.floor((now - at) / 1000) });
    }
    return failures;
  }

  close(): void {
    for (const stop of this.unhear) stop();
  }

  private failed(store: WrittenStore, full: boolean): void {
    const now = Date.now();
    this.failing.set(store, { full, at: now });
    // Not on every failure: under load they come by the thousand.
    if (now - (this.told.get(store) ?? 0) < WRITE_FAILURE_REMEMBERED_MS / 2) return;
    this.told.set(store, now);
    siblings.tell('write-failed', [store, full ? 'full' : 'unavailable']);
  }
}
