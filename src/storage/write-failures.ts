import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
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

/** How often, at most, the disk is probed while a store on it is failing for want of space. */
export const DISK_PROBE_EVERY_MS = 1000;
/** What a probe writes: room for many writes' pages of a write-ahead log, so that space found is space a write can use. */
export const DISK_PROBE_BYTES = 1 << 20;

/** A small write to the disk of the embedded stores (`stores`, those kept there): it succeeds once a write to them would. */
export interface DiskProbe {
  stores: readonly WrittenStore[];
  write(): Promise<void>;
}

/**
 * Writes DISK_PROBE_BYTES to a file of this process's own in `dir`, syncs it and deletes it. Not a
 * write to a store: a table written to would take a page of the file, and a probe fails as the disk
 * does, not as the store's own state does (a lock, a transaction).
 */
export function diskProbe(dir: string, stores: readonly WrittenStore[]): DiskProbe {
  const file = join(dir, `.disk-probe-${process.pid}`);
  return {
    stores,
    async write() {
      try {
        const handle = await open(file, 'w', 0o600);
        try {
          await handle.writeFile(Buffer.alloc(DISK_PROBE_BYTES));
          await handle.datasync();
        } finally {
          await handle.close();
        }
      } finally {
        await rm(file, { force: true });
      }
    },
  };
}

interface Failure {
  full: boolean;
  at: number;
  /** Counts the failures noted: a probe clears only those noted before it began. */
  seq: number;
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
 *
 * A store failing for want of disk space on the embedded stores' disk is cleared also when a probe
 * of that disk succeeds (`disk`, tried as readiness is asked): readiness takes the instance out of
 * traffic, so no write may come to clear it, and it must not wait for WRITE_FAILURE_REMEMBERED_MS
 * once space is back. A server's disk (EventStoreDB's, MongoDB's) is not the service's to probe:
 * both stop when theirs fills, so the ping of readiness finds them unreachable until they are back.
 */
export class WriteFailures {
  private readonly failing = new Map<WrittenStore, Failure>();
  /** When this worker last told the others of each store's failures. */
  private readonly told = new Map<WrittenStore, number>();
  private readonly unhear: (() => void)[];
  /** The probe under way, and when the last one began. */
  private probing?: Promise<void>;
  private probedAt = -Infinity;
  private seq = 0;

  constructor(private readonly disk?: DiskProbe) {
    this.unhear = [
      siblings.hear('write-failed', ([store, full]) => this.failing.set(store as WrittenStore, { full: full === 'full', at: Date.now(), seq: ++this.seq })),
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
    this.succeeded(store);
    return result;
  }

  /** The stores failing now, and whether for want of disk space; those full on a disk a probe finds room on again are cleared first. */
  async current(now = Date.now()): Promise<{ store: WrittenStore; full: boolean; secondsAgo: number }[]> {
    await this.probeDisk(now);
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

  /** A write to `store` succeeded: it is not failing, here nor (told) on the other workers. */
  private succeeded(store: WrittenStore): void {
    if (!this.failing.delete(store)) return;
    this.told.delete(store);
    siblings.tell('wrote', [store]);
  }

  /**
   * Probes the disk when a store on it is failing for want of space, at most once per
   * DISK_PROBE_EVERY_MS (callers meanwhile wait for the probe under way): on success, each store
   * full since before the probe began is cleared as by a write. One that failed during the probe stays.
   */
  private async probeDisk(now: number): Promise<void> {
    const { disk } = this;
    if (!disk || !disk.stores.some((store) => this.failing.get(store)?.full)) return;
    if (!this.probing && now - this.probedAt >= DISK_PROBE_EVERY_MS) {
      this.probedAt = now;
      const noted = this.seq;
      this.probing = disk
        .write()
        .then(
          () => {
            for (const store of disk.stores) {
              const failure = this.failing.get(store);
              if (failure?.full && failure.seq <= noted) this.succeeded(store);
            }
          },
          () => undefined, // still full: the store stays failing
        )
        .finally(() => (this.probing = undefined));
    }
    await this.probing;
  }

  private failed(store: WrittenStore, full: boolean): void {
    const now = Date.now();
    this.failing.set(store, { full, at: now, seq: ++this.seq });
    // Not on every failure: under load they come by the thousand.
    if (now - (this.told.get(store) ?? 0) < WRITE_FAILURE_REMEMBERED_MS / 2) return;
    this.told.set(store, now);
    siblings.tell('write-failed', [store, full ? 'full' : 'unavailable']);
  }
}
