import { Logger } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { comparePositions, EventBatch, EventStore, Position, START } from '../event-store/event-store.port';
import { GenerationReplacedError, ReadDocument, ReadStore } from '../read-store/read-store.port';
import type { Projection } from './projection';

export type ProjectorState = 'starting' | 'running' | 'stopped' | 'failed';

/** An event a projection could not fold. It stops the projection: skipping it would corrupt the model. */
export class PoisonEventError extends Error {
  readonly reason: string;

  constructor(
    readonly streamId: string,
    readonly revision: number,
    error: unknown,
  ) {
    const reason = error instanceof Error ? error.message : String(error);
    super(`cannot apply ${streamId}@${revision}: ${reason}`);
    this.name = 'PoisonEventError';
    this.reason = reason;
  }
}

interface Waiter {
  position: Position;
  resolve: () => void;
  reject: (error: Error) => void;
}

const RETRY_DELAY_MS = 1000;
/**
 * Events read per batch at most. Following the head, batches hold what is new; catching up (a first
 * start on a large store), each batch is one transaction, and fewer, larger ones fold several times
 * faster. Not larger: requests wait while a batch folds.
 */
const MAX_BATCH = 5000;

/**
 * Folds one batch into one generation of a projection's read model: the documents the batch
 * touches are loaded once, folded in memory, and written back together with the new checkpoint.
 * A batch with nothing for this model still saves the checkpoint (a small write, not synced), so
 * the persisted checkpoint says how far the model really is: the CLI's status and a rebuild's
 * promotion compare it.
 */
export async function foldBatch(
  projection: Projection,
  readStore: ReadStore,
  generation: number,
  batch: EventBatch,
): Promise<void> {
  const prefix = `${projection.streamPrefix}-`;
  const relevant = batch.events.filter((e) => e.streamId.startsWith(prefix));
  const collection = projection.schema.name;
  const idOf = (streamId: string) => streamId.slice(prefix.length);
  // A stream whose first event is in this batch is folded from scratch, so only the others are
  // looked up (in a rebuild, nearly every document is new). Should the store hold it already, as
  // far or further, commit's revision guard keeps the stored one.
  const started = new Set<string>();
  const existing = new Set<string>();
  for (const event of relevant) {
    const id = idOf(event.streamId);
    if (event.revision === 0) started.add(id);
    else if (!started.has(id)) existing.add(id);
  }
  const documents = await readStore.getMany(collection, [...existing], generation);
  const changed = new Map<string, ReadDocument>();
  for (const event of relevant) {
    const id = idOf(event.streamId);
    const current = documents.get(id) ?? null;
    if (current && event.revision <= current.revision) continue; // already applied
    let next: ReadDocument;
    try {
      next = projection.evolve(current, event);
    } catch (error) {
      throw new PoisonEventError(event.streamId, event.revision, error);
    }
    documents.set(id, next);
    changed.set(id, next);
  }
  await readStore.commit(collection, [...changed.values()], { generation, position: batch.position });
}

/**
 * Follows the event store from a persisted checkpoint and folds each batch of events into the live
 * generation of one read model. When a rebuild (another process) replaces that generation, the
 * next commit fails with GenerationReplacedError and the projector carries on from the new live
 * generation's checkpoint.
 */
export class Projector {
  private readonly logger: Logger;
  private readonly abort = new AbortController();
  private position: Position = START;
  private generation = 0;
  private waiters: Waiter[] = [];
  private loop?: Promise<void>;
  state: ProjectorState = 'starting';
  failure?: Error;

  constructor(
    readonly projection: Projection,
    private readonly eventStore: EventStore,
    private readonly readStore: ReadStore,
  ) {
    this.logger = new Logger(`Projector:${projection.name}`);
  }

  get checkpoint(): Position {
    return this.position;
  }

  async start(): Promise<void> {
    await this.readStore.ensureCollection(this.projection.schema);
    await this.loadLiveGeneration();
    this.state = 'running';
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (this.state === 'running') this.state = 'stopped';
    this.rejectWaiters(new Error(`projection ${this.projection.name} stopped`));
  }

  /** Resolves once the read model has folded every event up to `position`. */
  waitFor(position: Position, timeoutMs: number): Promise<void> {
    if (comparePositions(this.position, position) >= 0) return Promise.resolve();
    if (this.state !== 'running') return Promise.reject(this.failure ?? new Error(`projection ${this.projection.name} is ${this.state}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`projection ${this.projection.name} did not reach the write within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = {
        position,
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      this.waiters.push(waiter);
    });
  }

  private async run(): Promise<void> {
    const { signal } = this.abort;
    while (!signal.aborted) {
      try {
        const streamPrefix = this.streamPrefix;
        for await (const batch of this.eventStore.subscribeToAll(this.position, { signal, streamPrefix, maxBatchSize: MAX_BATCH })) {
          await this.apply(batch);
          // The store calls are synchronous on SQLite: catching up must not keep requests waiting.
          await nextTurn();
        }
      } catch (error) {
        if (error instanceof PoisonEventError) {
          this.state = 'failed';
          this.failure = error;
          this.logger.error(`Projection stopped on a poison event: ${error.message}`);
          this.rejectWaiters(error);
          await this.readStore
            .recordFailure(this.projection.schema.name, this.generation, {
              streamId: error.streamId,
              revision: error.revision,
              error: error.reason,
            })
            .catch((e) => this.logger.error(`Could not record the failure: ${(e as Error).message}`));
          return;
        }
        if (error instanceof GenerationReplacedError) {
          const replaced = this.generation;
          await this.loadLiveGeneration();
          this.logger.log(`Generation ${replaced} was replaced by a rebuild: continuing in generation ${this.generation}`);
          continue;
        }
        // The store is unreachable or busy: try again from the checkpoint the read store kept. A
        // server that crashed may have lost commits it had acknowledged; this fold refolds them.
        this.logger.warn(`Subscription failed, retrying in ${RETRY_DELAY_MS} ms: ${(error as Error).message}`);
        await new Promise((r) => setTimeout(r, RETRY_DELAY_MS));
        await this.loadLiveGeneration().catch(() => undefined); // still unreachable: the next attempt says so
      }
    }
  }

  /** The streams this projector folds: `<prefix>-<id>`. */
  get streamPrefix(): string {
    return `${this.projection.streamPrefix}-`;
  }

  private async loadLiveGeneration(): Promise<void> {
    const { live } = await this.readStore.status(this.projection.schema.name);
    this.generation = live.generation;
    this.position = live.position ?? START;
  }

  private async apply(batch: EventBatch): Promise<void> {
    await foldBatch(this.projection, this.readStore, this.generation, batch);
    this.position = batch.position;
    this.resolveWaiters();
  }

  private resolveWaiters(): void {
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (comparePositions(this.position, w.position) >= 0) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private rejectWaiters(error: Error): void {
    for (const w of this.waiters) w.reject(error);
    this.waiters = [];
  }
}
