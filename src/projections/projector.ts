import { Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { comparePositions, EventBatch, EventStore, Position, START, UnreadableEventError } from '../event-store/event-store.port';
import { GenerationReplacedError, ReadDocument, ReadDocuments, ReadGenerations, ReadLeases } from '../read-store/read-store.port';
import { foldBatch, PoisonEventError } from './fold-batch';
import { ParkedStreams } from './parked';
import { PositionWaiters } from './position-waiters';
import { isGoneFromThisMachine, siblings } from '../instance';
import { inSpan, linksTo, tracingOn } from '../tracing/tracing';
import { follows, type Projection } from './projection';

export type ProjectorState = 'starting' | 'running' | 'stopped' | 'failed';

const RETRY_DELAY_MS = 1000;
/** Documents a folder keeps as it wrote them, least recently used dropped first (see Projector.written). */
const WRITTEN_KEPT = 10_000;
/**
 * Events read per batch at most while the read model catches up with the head found at start (a
 * first start on a large store, whose reads answer 503 meanwhile): each batch is one transaction, and
 * fewer, larger ones fold several times faster. Not larger: requests wait while a batch folds.
 */
export const CATCH_UP_BATCH = 5000;
/**
 * Events read per batch at most once caught up. Following the head, batches hold what is new; a
 * backlog (a burst of another worker's writes, a pause) folds in batches that hold the event loop
 * for a few milliseconds each, not for the hundred or so that CATCH_UP_BATCH would.
 */
export const LIVE_BATCH = 500;
/**
 * How long the stored checkpoint of a read model may stay behind batches with nothing for it (a
 * profile's events, for the customers): they move the checkpoint in memory only, and it is saved
 * with the next batch that holds some, or after this long. Saving it with each would be a
 * transaction per read model per write; this way it is a few a second.
 */
export const CHECKPOINT_EVERY_MS = 200;

/** Who this projector is to the lease, and for how long a lease it holds (see Projector). */
export interface LeaseSettings {
  holder: string;
  ttlMs: number;
}

/** How often an instance that does not fold reads the stored checkpoint while requests wait on it. */
export const FOLLOW_POLL_MS = 10;
/** How often it reads it while it has not reached the head found at start (see catchUpTo). */
const CATCH_UP_POLL_MS = 100;

/** What a projector does with an event it cannot fold: park its stream (the default), or stop (POISON_EVENTS=stop). */
export type PoisonEventsMode = 'park' | 'stop';

/**
 * Keeps one read model current. Any number of instances of the service may run one each for the
 * same read store; a lease kept in the read store (one per read model) lets exactly one of them
 * fold at a time, renewed every third of its time to live. The others follow: they try for the
 * lease as often, and read the stored checkpoint, every FOLLOW_POLL_MS while requests wait on it,
 * one read for all of them. When the holder dies, its lease runs out and another instance takes it
 * within 4/3 of the lease's time to live (at its next attempt, when the dead holder ran on the same
 * machine), and goes on from the stored checkpoint.
 *
 * The folder follows the event store from the live generation's checkpoint and folds each batch
 * of events into it. When a rebuild (another process) replaces that generation, the next commit
 * fails with GenerationReplacedError and the projector carries on from the new live generation's
 * checkpoint. A holder that lost its lease without noticing yet (paused past its time to live) may
 * commit one more batch beside the new one: harmless, since a document takes only a newer revision
 * and the checkpoint only moves forward. Batches with nothing for the read model move its stored
 * checkpoint at most every CHECKPOINT_EVERY_MS, and as the projector stops.
 */
export class Projector {
  private readonly logger: Logger;
  private readonly abort = new AbortController();
  private position: Position = START;
  private generation = 0;
  private readonly waiters = new PositionWaiters();
  private loop?: Promise<void>;
  /** Ends a follower's pause early: a request started waiting, the folder told of a checkpoint, or the projector stops. */
  private wake?: () => void;
  /** Stops hearing of the folder's checkpoints (another worker's). */
  private unhear = () => {};
  state: ProjectorState = 'starting';
  failure?: Error;
  /** True while this instance holds the lease and folds; false while it follows another. */
  folding = false;
  /** Called each time this instance starts folding (gains the lease): the schema watch looks then. */
  onFolding?: () => void;
  /**
   * The documents this folder wrote last, by id, in `generation`: the next batch to change one need
   * not read it. Only the lease holder writes a generation, and a document is the same fold of its
   * stream whoever wrote it (an erasure's scrub aside, which its erasure event's fold repeats), so
   * they stay right while this instance folds; forgotten when it starts folding again, and on any
   * failure (a rebuild's promotion of another generation is one).
   */
  private readonly written = new LRUCache<string, ReadDocument>({ max: WRITTEN_KEPT });
  /** The event store's head when the app started, until the read model has reached it (see catchUpTo). */
  private startHead?: Position;
  private readonly advanceListeners = new Set<(written: ReadDocument[] | null) => void>();
  /**
   * The stored checkpoint behind `position` by batches with nothing for this model (see
   * CHECKPOINT_EVERY_MS): when it was last saved (performance.now()), whether it is behind, the
   * save to come and the one under way.
   */
  private savedAt = -Infinity;
  private unsaved = false;
  private saveLater?: NodeJS.Timeout;
  private saving?: Promise<void>;
  /** The streams parked in the generation folded, and the CLI's requests on them (see ParkedStreams). */
  private readonly parked: ParkedStreams;
  /** Batches and settlements take turns: one at a time writes the generation. */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    readonly projection: Projection,
    private readonly eventStore: EventStore,
    private readonly readStore: ReadDocuments & ReadGenerations & ReadLeases,
    private readonly lease: LeaseSettings,
    /** How long it waits to try again after a store failed it; tests make it short. */
    private readonly retryDelayMs = RETRY_DELAY_MS,
    private readonly checkpointEveryMs = CHECKPOINT_EVERY_MS,
    private readonly poisonEvents: PoisonEventsMode = 'park',
  ) {
    this.logger = new Logger(`Projector:${projection.name}`);
    this.parked = new ParkedStreams(projection, eventStore, readStore, this.logger, poisonEvents, lease);
  }

  get checkpoint(): Position {
    return this.position;
  }

  /**
   * Until the read model has folded up to `head` (the event store's head when the app started), it
   * misses records that exist: `caughtUp` is false, and reads must not answer from it. A follower
   * reads the stored checkpoint every CATCH_UP_POLL_MS meanwhile, so it sees the folder get there.
   */
  catchUpTo(head: Position): void {
    this.startHead = head;
  }

  /** Whether the read model has reached the head found at start (see catchUpTo); once true, for good. */
  get caughtUp(): boolean {
    if (this.startHead && comparePositions(this.position, this.startHead) >= 0) this.startHead = undefined;
    return this.startHead === undefined;
  }

  /** Events from the checkpoint to the head found at start; null when caught up, or where the store cannot count them. */
  get eventsToStartHead(): number | null {
    return this.caughtUp ? null : this.eventStore.eventsBetween(this.position, this.startHead!);
  }

  async start(): Promise<void> {
    await this.readStore.ensureCollection(this.projection.schema);
    await this.loadLiveGeneration();
    this.state = 'running';
    // A follower with writes waiting reads the checkpoint as soon as the folding worker moves it.
    this.unhear = siblings.hear('folded', () => {
      if (!this.folding && (this.waiters.size > 0 || !this.caughtUp)) this.wake?.();
    });
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.unhear();
    this.abort.abort();
    this.wake?.();
    await this.loop;
    // Where batches with nothing for this model left the stored checkpoint behind: saved, so a restart need not read them again.
    await this.settleSaves();
    if (this.unsaved && this.state === 'running') await this.saveCheckpoint();
    // Given up on the way out, so another instance takes over at once rather than when it expires.
    await this.readStore.releaseLease(this.leaseName, this.lease.holder).catch(() => undefined);
    if (this.state === 'running') this.state = 'stopped';
    this.waiters.rejectAll(new Error(`projection ${this.projection.name} stopped`));
  }

  /**
   * Calls `listener` each time the checkpoint moves on: with the documents the batch wrote when this
   * instance folded it, with null when it learnt that another instance folded. Returns what stops it.
   */
  onAdvance(listener: (written: ReadDocument[] | null) => void): () => void {
    this.advanceListeners.add(listener);
    return () => void this.advanceListeners.delete(listener);
  }

  private advanced(written: ReadDocument[] | null): void {
    for (const listener of this.advanceListeners) listener(written);
  }

  /** Resolves once the read model has folded every event up to `position`. */
  waitFor(position: Position, timeoutMs: number): Promise<void> {
    if (comparePositions(this.position, position) >= 0) return Promise.resolve();
    if (this.state !== 'running') return Promise.reject(this.failure ?? new Error(`projection ${this.projection.name} is ${this.state}`));
    const waiting = this.waiters.add(position, timeoutMs, () => new Error(`projection ${this.projection.name} did not reach the write within ${timeoutMs} ms`));
    // The first waiter starts the follower's quick polling; later ones share it.
    if (this.waiters.size === 1) this.wake?.();
    return waiting;
  }

  /** Whether this projector folds the events of `streamId`. */
  follows(streamId: string): boolean {
    return follows(this.projection, streamId);
  }

  private get leaseName(): string {
    return this.projection.schema.name;
  }

  private async run(): Promise<void> {
    const { signal } = this.abort;
    while (!signal.aborted && this.state === 'running') {
      const held = await this.takeLease().catch((error) => {
        this.logger.warn(`Could not take the lease: ${(error as Error).message}`);
        return false;
      });
      if (held) await this.fold();
      else await this.follow();
    }
  }

  /**
   * Takes (or renews) the lease if it is free, expired or this instance's. A holder on this machine
   * that no longer runs (a restart after a crash, a worker killed) is replaced at once rather than
   * waited out. The projector does this itself once started; before that, a catch-up by rebuild
   * holds the lease through it.
   */
  async takeLease(): Promise<boolean> {
    const { holder, ttlMs } = this.lease;
    const current = await this.readStore.acquireLease(this.leaseName, holder, ttlMs);
    if (current === holder) return true;
    if (!isGoneFromThisMachine(current)) return false;
    const replaced = (await this.readStore.acquireLease(this.leaseName, holder, ttlMs, current)) === holder;
    if (replaced) this.logger.log(`Took the lease over from ${current}, which no longer runs`);
    return replaced;
  }

  /** Folds while the lease is renewed; returns once it is lost, the projector stops, or meets a poison event. */
  private async fold(): Promise<void> {
    this.folding = true;
    this.logger.log(`Folding (holder ${this.lease.holder})`);
    this.onFolding?.();
    const lost = new AbortController();
    const signal = AbortSignal.any([this.abort.signal, lost.signal]);
    let renewing: Promise<unknown> = Promise.resolve();
    const renew = setInterval(() => {
      renewing = this.readStore.acquireLease(this.leaseName, this.lease.holder, this.lease.ttlMs).then(
        (current) => current === this.lease.holder || lost.abort(),
        () => lost.abort(),
      );
    }, this.lease.ttlMs / 3);
    const stopPolling = this.parked.pollRequests(signal, () => this.settleRequests());
    try {
      // The previous holder may have moved the checkpoint on since this instance last looked.
      // The head: where this fold begins, for the erasures appended while it runs (see foldBatch).
      let began: Position;
      // Written by the holders before, while this instance followed.
      this.written.clear();
      try {
        await this.loadLiveGeneration();
        began = await this.eventStore.headPosition();
      } catch (error) {
        this.logger.warn(`Could not read the checkpoint or the head of the events: ${(error as Error).message}`);
        return void (await this.pause(this.retryDelayMs));
      }
      while (!signal.aborted) {
        try {
          const { streamPrefixes, readsValues: values } = this.projection;
          const catchingUp = !this.caughtUp;
          const maxBatchSize = catchingUp ? CATCH_UP_BATCH : LIVE_BATCH;
          // As the store holds them: a batch that failed may have parked streams in memory only.
          await this.parked.load(this.generation);
          for await (const batch of this.eventStore.subscribeToAll(this.position, { signal, streamPrefixes, values, maxBatchSize })) {
            // In turn with settlements: one sees the other's commit and position whole.
            await this.inTurn(() => this.apply(batch, began));
            // The store calls are synchronous on SQLite: catching up must not keep requests waiting.
            await nextTurn();
            // Caught up: subscribed again (below), with the batches of a read model that serves.
            if (catchingUp && this.caughtUp) break;
          }
        } catch (error) {
          // A commit that failed may have been kept in part, or one acknowledged lost: read them again.
          this.written.clear();
          if (error instanceof PoisonEventError) return await this.stopOnPoison(error);
          // Subscriptions hand unreadable events over (StoredEvent.unreadable): a store that throws one anyway cannot be read past.
          if (error instanceof UnreadableEventError) return await this.stopOnPoison(new PoisonEventError(error.streamId, error.revision, error.reason));
          if (error instanceof GenerationReplacedError) {
            const replaced = this.generation;
            // Unreadable just now, the new generation is looked up again after the pause below. Read
            // as still live, the store's reads lag the fence that refused the commit (MongoDB: a
            // majority read before the swap reaches a majority): folding again at once would only be
            // refused again, so it waits the pause below too.
            const reloaded = await this.loadLiveGeneration().then(
              () => true,
              () => false,
            );
            if (reloaded && this.generation !== replaced) {
              this.logger.log(`Generation ${replaced} was replaced by a rebuild: continuing in generation ${this.generation}`);
              continue;
            }
          }
          // The store is unreachable or busy: try again from the checkpoint the read store kept. A
          // server that crashed may have lost commits it had acknowledged; this fold refolds them.
          this.logger.warn(`Subscription failed, retrying in ${this.retryDelayMs} ms: ${(error as Error).message}`);
          await sleep(this.retryDelayMs, undefined, { signal }).catch(() => undefined); // cut short by a stop or the lease's loss
          await this.loadLiveGeneration().catch(() => undefined); // still unreachable: the next attempt says so
        }
      }
      if (lost.signal.aborted && !this.abort.signal.aborted) this.logger.warn('Lost the lease: another instance folds now');
    } finally {
      clearInterval(renew);
      await stopPolling();
      await renewing; // so a renewal still under way cannot take the lease back after run() gives it up
      this.folding = false;
    }
  }

  /**
   * Until it is time to try for the lease again: reads the live generation's stored checkpoint,
   * every FOLLOW_POLL_MS while requests wait on it (one read for all of them), every
   * CATCH_UP_POLL_MS while it has not reached the head found at start, else once.
   */
  private async follow(): Promise<void> {
    const until = Date.now() + this.lease.ttlMs / 3;
    while (!this.abort.signal.aborted && this.state === 'running') {
      try {
        const { live } = await this.readStore.status(this.projection.schema.name);
        if (live.failure) {
          // The folder stopped on an event it cannot fold: this instance would stop on it too.
          this.state = 'failed';
          this.failure = new PoisonEventError(live.failure.streamId, live.failure.revision, live.failure.error);
          this.waiters.rejectAll(this.failure);
          return;
        }
        this.generation = live.generation;
        if (live.position && comparePositions(live.position, this.position) > 0) {
          this.position = live.position;
          this.advanced(null);
        }
        this.waiters.reached(this.position);
      } catch (error) {
        this.logger.warn(`Could not read the checkpoint: ${(error as Error).message}`);
      }
      const left = until - Date.now();
      if (left <= 0) return;
      const every = this.waiters.size > 0 ? FOLLOW_POLL_MS : this.caughtUp ? left : CATCH_UP_POLL_MS;
      await this.pause(Math.min(every, left));
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      this.wake = done;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    }).finally(() => (this.wake = undefined));
  }

  private async stopOnPoison(error: PoisonEventError): Promise<void> {
    this.state = 'failed';
    // A checkpoint saved after the failure is recorded would clear it: none is.
    await this.settleSaves();
    this.failure = error;
    this.logger.error(`Projection stopped on a poison event: ${error.message}`);
    this.waiters.rejectAll(error);
    await this.readStore
      .recordFailure(this.projection.schema.name, this.generation, {
        streamId: error.streamId,
        revision: error.revision,
        error: error.reason,
      })
      .catch((e) => this.logger.error(`Could not record the failure: ${(e as Error).message}`));
  }

  /** The CLI's retry and skip requests, settled in the fold's turn: the lease holder is the generation's only writer. */
  private async settleRequests(): Promise<void> {
    const generation = this.generation;
    // Settled only while the fold is still in this generation when its turn comes.
    const inTurn = <T>(work: () => Promise<T>) => this.inTurn(() => (this.generation === generation ? work() : Promise.resolve(undefined as T)));
    await this.parked.settle(
      generation,
      () => this.position,
      inTurn,
      () => {
        // Documents written outside the batches: read again when next needed.
        this.written.clear();
        this.saved();
        siblings.tell('folded');
      },
    );
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private async loadLiveGeneration(): Promise<void> {
    const { live } = await this.readStore.status(this.projection.schema.name);
    this.generation = live.generation;
    const before = this.position;
    this.position = live.position ?? START;
    if (comparePositions(this.position, before) > 0) this.advanced(null);
    // A rebuild or another holder may have folded past a write that waits: no later event may come to answer it.
    this.waiters.reached(this.position);
  }

  private async apply(batch: EventBatch, began: Position): Promise<void> {
    // Nothing for this read model: the checkpoint moves in memory, and is stored later (see CHECKPOINT_EVERY_MS).
    const sinceSaved = performance.now() - this.savedAt;
    if (!batch.events.some((e) => this.follows(e.streamId)) && sinceSaved < this.checkpointEveryMs) {
      this.position = batch.position;
      this.unsaved = true;
      this.waiters.reached(this.position);
      this.saveSoon(this.checkpointEveryMs - sinceSaved);
      return;
    }
    // A trace of its own per batch that holds events of this read model, linked to the requests that
    // appended them (whichever instance served them).
    const relevant = tracingOn() ? batch.events.filter((e) => this.follows(e.streamId)) : [];
    const fold = () => foldBatch(this.projection, this.readStore, this.generation, batch, began, this.written, this.parked.current());
    const written =
      relevant.length === 0
        ? await fold()
        : await inSpan(
            `fold ${this.projection.name}`,
            () => ({
              'projection.name': this.projection.name,
              'projection.events': relevant.length,
              'projection.position': `${batch.position.commit}/${batch.position.prepare}`,
            }),
            fold,
            { root: true, links: () => linksTo(relevant.map((e) => e.metadata.traceparent)) },
          );
    // An event's own document is never read again.
    if (this.projection.documents === 'record') for (const document of written) this.written.set(document.id, document);
    this.position = batch.position;
    this.saved();
    this.waiters.reached(this.position);
    if (written.length > 0) this.advanced(written);
    if (batch.events.length > 0) siblings.tell('folded');
  }

  /**
   * Stores the checkpoint where batches with nothing for this model left it, beside the fold: a
   * checkpoint only moves forward in the store. A store that failed is tried again after
   * retryDelayMs; a generation a rebuild promoted meanwhile gets the checkpoint instead (the
   * events up to it hold nothing for this model, and the rebuild folded every event before its own).
   */
  private saveCheckpoint(): Promise<void> {
    this.cancelSave();
    const position = this.position;
    const name = this.projection.schema.name;
    this.savedAt = performance.now();
    this.saving = (async () => {
      try {
        await this.readStore.commit(name, [], { generation: this.generation, position }).catch(async (error: unknown) => {
          if (!(error instanceof GenerationReplacedError)) throw error;
          const { live } = await this.readStore.status(name);
          await this.readStore.commit(name, [], { generation: live.generation, position });
        });
        siblings.tell('folded');
        if (this.position === position) this.unsaved = false;
        else this.saveSoon(this.checkpointEveryMs); // batches that moved it on while the save awaited a server
      } catch (error) {
        this.savedAt = -Infinity; // the next batch saves it, whatever it holds
        this.logger.warn(`Could not save the checkpoint: ${(error as Error).message}`);
        this.saveSoon(this.retryDelayMs);
      } finally {
        this.saving = undefined;
      }
    })();
    return this.saving;
  }

  private saveSoon(ms: number): void {
    if (this.state === 'running' && !this.abort.signal.aborted) this.saveLater ??= setTimeout(() => void this.saveCheckpoint(), ms).unref();
  }

  /** A batch saved the checkpoint with its documents. */
  private saved(): void {
    this.savedAt = performance.now();
    this.unsaved = false;
    this.cancelSave();
  }

  /** No save to come, and none under way. */
  private async settleSaves(): Promise<void> {
    this.cancelSave();
    await this.saving;
  }

  private cancelSave(): void {
    clearTimeout(this.saveLater);
    this.saveLater = undefined;
  }
}
