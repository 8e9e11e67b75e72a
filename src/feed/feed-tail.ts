import { setMaxListeners } from 'node:events';
import { comparePositions, Position, START } from '../event-store/event-store.port';
import { siblings } from '../instance';
import type { Projector } from '../projections/projector';
import type { ReadDocument, ReadGenerations } from '../read-store/read-store.port';
import { FEED } from './feed.projection';

/** How often an instance that does not fold the feed's index looks for news while consumers wait. */
export const FEED_POLL_MS = 200;

interface Watcher {
  accountId: string;
  wake: () => void;
  /** The stored checkpoint last seen when it began to watch (see poll). */
  since: Position;
}

/** A consumer's wait for news of its account: `changed` resolves at the next. */
export interface FeedWatch {
  changed: Promise<void>;
  stop(): void;
}

/**
 * How far the feed can be read, and news of it for the consumers waiting at its end.
 *
 * The feed is read up to the index's checkpoint, never past it: a commit of the index is visible as
 * a whole on SQLite, but on MongoDB its documents may show before the checkpoint and in any order,
 * and an entry served before an earlier one shows would move the consumer's cursor past that one.
 *
 * News: the instance folding the index knows which accounts each batch touched and wakes only their
 * consumers. Another instance learns of batches from the stored checkpoint, read every FEED_POLL_MS
 * while anyone waits (and at once when a sibling worker says it folded), and wakes every consumer:
 * each then reads its page, which costs an index seek.
 */
export class FeedTail {
  private readonly watchers = new Set<Watcher>();
  private polling = false;
  private seen: Position = START;
  private readonly unhear: () => void;
  private readonly unlisten: () => void;
  private readonly closing = new AbortController();
  /** Aborted once the app closes: long-polls answer and streams end. */
  readonly closed = this.closing.signal;

  constructor(
    private readonly projector: Projector,
    private readonly readStore: ReadGenerations,
    private readonly pollMs = FEED_POLL_MS,
  ) {
    this.unlisten = projector.onAdvance((written) => this.wake(written));
    this.unhear = siblings.hear('folded', () => void this.poll().catch(() => undefined));
    // Thousands of consumers listen at once: not a leak.
    setMaxListeners(0, this.closed);
  }

  /**
   * The checkpoint of the index: where a page may read up to. Read from the store unless this
   * instance folds it: a write another instance answered must show in the next page read here.
   */
  async bound(): Promise<Position> {
    if (this.projector.folding) return this.projector.checkpoint;
    await this.readStored();
    return comparePositions(this.seen, this.projector.checkpoint) > 0 ? this.seen : this.projector.checkpoint;
  }

  /** Reads the stored checkpoint. */
  private async readStored(): Promise<void> {
    const { live } = await this.readStore.status(FEED);
    if (live.position && comparePositions(live.position, this.seen) > 0) this.seen = live.position;
  }

  /** Starts listening for news of the account: call it before reading the page, so no news between the two is lost. */
  watch(accountId: string): FeedWatch {
    let watcher!: Watcher;
    const changed = new Promise<void>((resolve) => (watcher = { accountId, wake: resolve, since: this.seen }));
    this.watchers.add(watcher);
    if (!this.polling) void this.pollWhileWatched();
    return { changed, stop: () => void this.watchers.delete(watcher) };
  }

  close(): void {
    this.closing.abort();
    this.unlisten();
    this.unhear();
    for (const watcher of this.watchers) watcher.wake();
    this.watchers.clear();
  }

  private wake(written: ReadDocument[] | null): void {
    const accounts = written && new Set(written.map((d) => d.accountId));
    for (const watcher of this.watchers) {
      if (accounts && !accounts.has(watcher.accountId)) continue;
      this.watchers.delete(watcher);
      watcher.wake();
    }
  }

  private async pollWhileWatched(): Promise<void> {
    this.polling = true;
    try {
      while (this.watchers.size > 0) {
        await new Promise((resolve) => setTimeout(resolve, this.pollMs));
        await this.poll().catch(() => undefined); // the store is unreachable: the next poll tries again
      }
    } finally {
      this.polling = false;
    }
  }

  /**
   * Wakes every consumer watching since before the stored checkpoint moved (not needed where this
   * instance folds): moved as this poll reads it, or as a page read did meanwhile, which woke no one.
   * At the poll's pace: a page read waking the others (and itself) would have them read back to back.
   */
  private async poll(): Promise<void> {
    if (this.projector.folding || this.watchers.size === 0) return;
    await this.readStored();
    for (const watcher of this.watchers) {
      if (comparePositions(this.seen, watcher.since) <= 0) continue;
      this.watchers.delete(watcher);
      watcher.wake();
    }
  }
}
