import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ReadModelsBehindError } from './read-models-behind.error';
import { comparePositions, EVENT_STORE, EventStore, Position, START } from '../event-store/event-store.port';
import { builtWith } from '../read-store/generation-rules';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { Projection, PROJECTIONS } from './projection';
import { Projector } from './projector';
import { REBUILD_GRACE_MS, rebuildProjections, type RebuildOptions } from './rebuild';
import { inSpan } from '../tracing/tracing';

/** Reads that found the replaced generation just before the promotion finish within this. */
const CATCH_UP_GRACE_MS = 1000;

/**
 * A read model further behind than this at start is caught up by a rebuild (the operators' one-pass
 * fold into a new generation, several times faster than the live projector's) before its projector
 * starts following the head.
 */
const CATCH_UP_BY_REBUILD_EVENTS = 10_000;

/**
 * Runs one projector per read model for the life of the app (folding, or following the instance
 * that holds the read model's lease), and lets writes wait for them.
 */
@Injectable()
export class ProjectionsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ProjectionsService.name);
  readonly projectors: Projector[];
  private readonly stopping = new AbortController();
  private catchingUp?: Promise<void>;
  /** The schema watch (watchSchemas), and the rebuilds with the current schema it runs, by read model. */
  private watching?: Promise<void>;
  private readonly reshaping = new Map<Projector, Promise<void>>();
  /** Ends the schema watch's wait: a projector started folding. */
  private wakeWatch?: () => void;

  constructor(
    @Inject(PROJECTIONS) projections: Projection[],
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    const lease = { holder: config.instanceId, ttlMs: config.projectionLeaseMs };
    this.projectors = projections.map((p) => new Projector(p, eventStore, readStore, lease, undefined, undefined, config.poisonEvents));
    for (const projector of this.projectors) projector.onFolding = () => this.wakeWatch?.();
  }

  /**
   * Starts the projectors. Those far behind the head are rebuilt first, in the background, by the
   * instance that takes their lease: the app serves meanwhile (their reads from the live generation
   * as it was, writes 503 until they run). Those whose live generation was built with another schema
   * than the code's (a filter added, removed or matched otherwise) start as usual, folding into it
   * and serving from it, while the instance that holds their lease rebuilds them in the background
   * with the code's schema (watchSchemas). Other instances follow as usual, and see the promotions.
   */
  async onApplicationBootstrap(): Promise<void> {
    const head = await this.eventStore.headPosition();
    const behind: Projector[] = [];
    for (const projector of this.projectors) {
      const { schema } = projector.projection;
      projector.catchUpTo(head);
      await this.readStore.ensureCollection(schema);
      // What a rebuild stopped during its grace period left: storage no read has used since.
      await this.readStore.dropRetired(schema.name, REBUILD_GRACE_MS);
      const { live } = await this.readStore.status(schema.name);
      // Only the instance that takes the read model's lease rebuilds it; the others follow it.
      if (this.farBehind(live.position, head) && (await projector.takeLease().catch(() => false))) behind.push(projector);
    }
    await Promise.all(this.projectors.filter((p) => !behind.includes(p)).map((p) => p.start()));
    if (behind.length) this.catchingUp = this.catchUpByRebuild(behind);
    this.watching = this.watchSchemas();
  }

  /**
   * While the app runs, the read models this instance folds (holds the lease of) are looked at every
   * lease period, and as soon as it gains one: one whose live generation was built with another schema than the code's is
   * rebuilt with it in the background. So a schema change is rebuilt whenever an instance of the
   * new version gets the lease (in a rolling deploy, once the old ones are gone), and a rebuild that
   * failed (a store down) is tried again at the next look.
   */
  private async watchSchemas(): Promise<void> {
    const { signal } = this.stopping;
    while (!signal.aborted) {
      for (const projector of this.projectors) {
        if (signal.aborted || !projector.folding || this.reshaping.has(projector)) continue;
        const { schema } = projector.projection;
        const built = await this.readStore
          .status(schema.name)
          .then(({ live }) => this.readStore.fingerprint(schema.name, live.generation))
          .then((fingerprint) => builtWith(fingerprint, schema))
          .catch(() => true); // the store down: looked at again next time
        if (built) continue;
        this.logger.log(`Read model ${projector.projection.name} was built with another schema: rebuilding it with the current one`);
        const rebuilt = this.rebuildWithSchema(projector).finally(() => this.reshaping.delete(projector));
        this.reshaping.set(projector, rebuilt);
      }
      await new Promise<void>((resolve) => {
        this.wakeWatch = resolve;
        sleep(this.config.projectionLeaseMs, undefined, { signal }).then(resolve, resolve);
      });
    }
  }

  /**
   * More than CATCH_UP_BY_REBUILD_EVENTS behind; where the event store cannot count events
   * (EventStoreDB), a read model that has folded nothing yet over a store that has some.
   */
  private farBehind(position: Position | null, head: Position): boolean {
    const lag = this.eventStore.eventsBetween(position ?? START, head);
    return lag === null ? position === null && comparePositions(head, START) > 0 : lag > CATCH_UP_BY_REBUILD_EVENTS;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping.abort();
    await Promise.all([this.catchingUp, this.watching, ...this.reshaping.values()]);
    await Promise.all(this.projectors.map((p) => p.stop()));
  }

  private async catchUpByRebuild(projectors: Projector[]): Promise<void> {
    const names = projectors.map((p) => p.projection.name).join(', ');
    this.logger.log(`Read models far behind the events: catching up ${names} by a rebuild`);
    const started = Date.now();
    // The leases stay this instance's while it rebuilds; each projector renews its own once started.
    const renew = setInterval(() => {
      for (const p of projectors) if (p.state === 'starting') p.takeLease().catch(() => undefined);
    }, this.config.projectionLeaseMs / 3);
    try {
      const results = await rebuildProjections(
        projectors.map((p) => p.projection),
        this.eventStore,
        this.readStore,
        {
          signal: this.stopping.signal,
          graceMs: CATCH_UP_GRACE_MS,
          ...this.parking(),
          // Each projector follows the head as soon as its read model is promoted.
          onPromoted: (projection) => projectors.find((p) => p.projection === projection)!.start(),
        },
      );
      const events = Math.max(...results.map((r) => r.events));
      this.logger.log(`Caught up ${names} from ${events} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      // The projectors not yet started fold from the live generation's checkpoint instead: slower, but they get there.
      this.logger.error(`Catching up ${names} by a rebuild failed: ${(error as Error).message}`);
      await Promise.all(projectors.filter((p) => p.state === 'starting').map((p) => p.start()));
    } finally {
      clearInterval(renew);
    }
  }

  /**
   * Rebuilds a read model whose live generation was built with another schema, beside its
   * projector, which goes on folding into it (reads and writes served as before; a filter it lacks
   * answers 503) until the rebuild is promoted: then it carries on in the new generation. The
   * generation replaced is kept for the CLI's grace period, as other instances may still be reading
   * it. Failed, the live generation stays, and the schema watch tries again.
   */
  private async rebuildWithSchema(projector: Projector): Promise<void> {
    const { name } = projector.projection;
    try {
      await rebuildProjections([projector.projection], this.eventStore, this.readStore, {
        signal: this.stopping.signal,
        graceMs: REBUILD_GRACE_MS,
        // Said as it goes live, not once the generation it replaced is dropped, a grace period later.
        onLive: ([result]) => this.logger.log(`Rebuilt ${name} with the current schema from ${result.events} events`),
        ...this.parking(),
      });
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      this.logger.error(`Rebuilding ${name} with the current schema failed, to be tried again: ${(error as Error).message}`);
    }
  }

  /** The service's own rebuilds (a catch-up, a new schema) park what they cannot fold as its projectors do, unless POISON_EVENTS=stop. */
  private parking(): Pick<RebuildOptions, 'park' | 'onParked'> {
    if (this.config.poisonEvents !== 'park') return {};
    return {
      park: true,
      onParked: (projection, streamId, revision, reason) =>
        this.logger.warn(`Parked ${streamId}@${revision} in the rebuild of ${projection.name}, and the events after it in its stream: ${reason}`),
    };
  }

  /**
   * Reads and lists go by the read model only once it has reached the head the app found at start:
   * before, it misses records (on a first start over a large store, all of them), and an empty list
   * would pass for an empty account. 503 meanwhile, as readiness says.
   */
  assertCaughtUp(collection: string, { afterWrite = false } = {}): void {
    const projector = this.projectors.find((p) => p.projection.schema.name === collection);
    if (projector && !projector.caughtUp) {
      // After a write (`afterWrite`: an answer that reads the read model), "try again" would write twice.
      const saved = afterWrite ? 'The change was saved, but the' : 'The';
      const retry = afterWrite ? 'read it again shortly' : 'try again shortly';
      throw new ReadModelsBehindError(`${saved} read models are still catching up with the records stored before the service started; ${retry}.`, 5);
    }
  }

  /**
   * Read-your-writes: resolves once every read model that follows `streamId` has folded the write
   * at `position`, or answers 503 after the configured bound (the write itself is saved either way).
   * Models of other streams need not wait: a subscription filtered by prefix (EventStoreDB) only
   * learns of foreign positions at its next checkpoint.
   */
  async waitFor(streamId: string, position: Position): Promise<void> {
    // Not those still catching up with the events stored before the start: their reads answer 503
    // until then (assertCaughtUp), and waiting would answer every write 503 for the whole catch-up
    // (a first start over a large store, or a read model the store has no generation of yet).
    const following = this.projectors.filter((p) => p.follows(streamId) && p.caughtUp);
    try {
      await inSpan(
        'wait for read models',
        () => ({ 'read_models.count': following.length, 'event_store.position': `${position.commit}/${position.prepare}` }),
        () => Promise.all(following.map((p) => p.waitFor(position, this.config.readYourWritesTimeoutMs))),
      );
    } catch (error) {
      this.logger.warn(`Read models behind a write: ${(error as Error).message}`);
      throw new ReadModelsBehindError('The change was saved, but the read models have not caught up with it yet. Read it again shortly.', 1);
    }
  }
}
