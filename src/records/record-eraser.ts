import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { notFound, Refusal } from '../errors';
import { ReadModelsBehindError } from '../projections/read-models-behind.error';
import type { CommandContext } from './command-context';
import type { ReadDocuments } from '../read-store/read-store.port';
import { decideErasure, RecordKind, RecordState, streamIdOf } from './record';
import type { RecordWriter } from './record-writer';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import type { DataKeys } from '../sealing/data-keys';
import type { PendingErasure } from '../key-store/key-store.port';

/** How often an erasure the read models were slow to show looks again. */
const RETRY_MS = 1000;

/**
 * Erases a record (crypto-shredding), in an order a crash cannot undo:
 * 1. its data key is destroyed (and the erasure kept pending in the key store): from here on its
 *    events open with no value, wherever they are read, and no write can seal a new one;
 * 2. the erasure event is appended (the history's last entry), and the read models fold it;
 * 3. its read model documents are scrubbed in every generation, the store's log truncated;
 * 4. the pending erasure is marked finished.
 * A crash after step 1 leaves the erasure pending: finishPending, at the next start, does 2 to 4.
 * An erased record's erase runs step 1 again where the key store has its key (one restored from a
 * backup older than the erasure: erasing again destroys it, operators.md). The finishes destroy it
 * again (a no-op but for the truncation of the key store's log, which a crash may have prevented).
 */
export class RecordEraser {
  private readonly logger: Logger;
  /** Records whose erasure waits in the background for the read models (see erase). */
  private readonly finishing = new Set<string>();
  /** Whether the start's listing of interrupted erasures failed, and is tried again in the background. */
  private listingAgain = false;
  /** Ends the background retries when the app stops: they would go on against closed stores. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly kind: RecordKind,
    /** The read model's collection. */
    private readonly collection: string,
    private readonly writer: RecordWriter,
    private readonly keys: DataKeys,
    private readonly readStore: ReadDocuments,
  ) {
    this.logger = new Logger(`${kind.label}Eraser`);
  }

  /**
   * `freeing` is given the record as it was before (not when it had been erased already), to free
   * what it held (a profile's slug) once the erasure is appended.
   *
   * When the read models are slow to show the erasure (503, as for any write saved but not shown),
   * its documents are scrubbed at once all the same, and the rest waits for them in the background:
   * a batch the projector opened before the key went may still be written after this scrub, so the
   * scrub and the log's truncation are done again once they show the erasure, and only then is it
   * marked finished. Until then it stays pending, for the next start should this process stop.
   * A scrub that fails (a store down) is tried again the same way.
   */
  async erase(id: string, context: CommandContext, causationId: string, freeing?: (before: RecordState) => Promise<void>): Promise<void> {
    const { state } = await this.writer.load(id);
    if (!state || state.accountId !== context.accountId) throw notFound(this.kind.label);
    const streamId = streamIdOf(this.kind, id);
    // Erased already: its key again only where the key store has one (restored from an older backup).
    if (!state.erased || (await this.keys.current(streamId)) !== null) {
      // In the erasure log first: if this fails, nothing was done, and a retry does it all.
      await this.keys.logErasure(streamId, context.accountId);
      try {
        await this.keys.destroy(streamId, context.accountId);
      } catch (error) {
        // Destroyed or not (a store down, a write concern not met in time: a read may not tell),
        // the erasure is logged: finished in the background, its key destroyed again first.
        this.finishInBackground(id, context);
        throw error;
      }
    }
    // Why the erasure is left to finish in the background, answered once the rest is done.
    let unfinished: unknown;
    try {
      await this.writer.write(id, context, causationId, (current) => decideErasure(this.kind, current, context.accountId));
    } catch (error) {
      if (!isLagging(error)) {
        // The key is gone, the erasure not written (a store down, too many writers): finished in the
        // background as a retry would, so that the read models do not show the record until one.
        this.finishInBackground(id, context);
        throw error;
      }
      unfinished = error;
    }
    try {
      await this.readStore.erase(this.collection, [id]);
      if (!unfinished) await this.keys.store.finishErasure(streamId);
    } catch (error) {
      // The scrub is one write per generation, which the driver does not retry (MongoDB's updateMany):
      // tried again in the background, as the erasure's event is.
      unfinished ??= error;
    }
    if (unfinished) this.finishInBackground(id, context);
    if (!state.erased) await freeing?.(state);
    if (unfinished) throw unfinished as Error;
  }

  private finishInBackground(id: string, context: CommandContext): void {
    if (!this.finishing.has(id) && !this.stopping.signal.aborted) void this.finishOnceShown(id, context);
  }

  /** Nest calls it as the app closes: what is left pending is finished by the next start (finishPending). */
  onApplicationShutdown(): void {
    this.stopping.abort();
  }

  /**
   * Finishes an erasure: appends it if it is not yet, and once the read models show it, scrubs and
   * marks it finished; tries every RETRY_MS while they lag or a store is down.
   */
  private async finishOnceShown(id: string, context: CommandContext): Promise<void> {
    const streamId = streamIdOf(this.kind, id);
    this.finishing.add(id);
    try {
      for (;;) {
        const stopped = await sleep(RETRY_MS, false, { ref: false, signal: this.stopping.signal }).catch(() => true);
        if (stopped) return;
        try {
          // The key first (idempotent): the destroy that led here may not have been made.
          await this.keys.destroy(streamId, context.accountId);
          // Appends the erasure if it is not yet, else nothing: waits for the read models to show it.
          await this.writer.write(id, context, randomUUID(), (current) => (current ? decideErasure(this.kind, current, context.accountId) : []));
          await this.readStore.erase(this.collection, [id]);
          await this.keys.destroy(streamId, context.accountId);
          await this.keys.store.finishErasure(streamId);
          return;
        } catch (error) {
          if (isLagging(error) || error instanceof StoreUnavailableError || isConflict(error)) continue;
          this.logger.warn(`Left the erasure of ${streamId} pending, to be finished at the next start: ${(error as Error).message}`);
          return;
        }
      }
    } finally {
      this.finishing.delete(id);
    }
  }

  /**
   * Finishes the erasures a crash interrupted after their key was destroyed. When the key store
   * cannot list them (a store down at the start), it looks again every RETRY_MS in the background.
   */
  async finishPending(): Promise<void> {
    const prefix = `${this.kind.streamPrefix}-`;
    let pending: PendingErasure[];
    try {
      pending = await this.keys.store.pendingErasures(prefix);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || this.stopping.signal.aborted) throw error;
      // Said once, not every second of an outage.
      if (!this.listingAgain) this.logger.warn(`Could not list the interrupted erasures, looking again every ${RETRY_MS} ms: ${error.message}`);
      this.listingAgain = true;
      void sleep(RETRY_MS, false, { ref: false, signal: this.stopping.signal })
        .then(() => this.finishPending())
        .catch((later: Error) => {
          if (!this.stopping.signal.aborted) this.logger.warn(`Left the interrupted erasures for the next start: ${later.message}`);
        });
      return;
    }
    if (this.listingAgain) this.logger.log(`Listed the interrupted erasures: ${pending.length} to finish`);
    this.listingAgain = false;
    for (const { keyId, erasedBy } of pending) {
      const id = keyId.slice(prefix.length);
      const context = { accountId: erasedBy, requestId: randomUUID() };
      try {
        await this.writer.write(id, context, randomUUID(), (current) => (current ? decideErasure(this.kind, current, erasedBy) : []));
        await this.readStore.erase(this.collection, [id]);
        await this.keys.destroy(keyId, erasedBy);
        await this.keys.store.finishErasure(keyId);
        this.logger.log(`Finished the erasure of ${keyId}, which a stop had interrupted`);
      } catch (error) {
        // The read models slow to show it (a batch opened before the key went may still be written),
        // a store down, too many writers: finished in the background, each one apart from the others.
        this.logger.warn(`Finishing the erasure of ${keyId} in the background: ${(error as Error).message}`);
        this.finishInBackground(id, context);
      }
    }
  }
}

/** A write saved, that the read models did not show in time. */
const isLagging = (error: unknown): error is ReadModelsBehindError => error instanceof ReadModelsBehindError;
/** Too many writers at once on the record: worth another try. */
const isConflict = (error: unknown) => error instanceof Refusal && error.reason === 'conflict';
