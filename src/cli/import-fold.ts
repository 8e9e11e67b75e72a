import { setTimeout as sleep } from 'node:timers/promises';
import type { AppConfig } from '../config/config';
import { START, type EventStore, type Position } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { Projector } from '../projections/projector';
import { rebuildProjections } from '../projections/rebuild';
import type { ReadStore } from '../read-store/read-store.port';
import { READ_MODELS } from '../read-models';
import { count, duration } from './output';

/**
 * How long the fold's leases last unrenewed: past the promotion of a million records' read models,
 * whose index builds hold this thread (renewing every projectionLeaseMs / 3) for tens of seconds.
 * A service started meanwhile waits for the promotion rather than take the leases and rebuild
 * beside it. Should the import die (kill -9), a service on this machine takes them over at once
 * (isGoneFromThisMachine), as from any instance that no longer runs.
 */
const LEASE_MS = 10 * 60_000;
/** Replaced generations are kept this long after the fold's promotion: a service's reads that resolved them just before. */
const GRACE_MS = 1000;
const TTY_EVERY_MS = 200;
const LINE_EVERY_MS = 5000;

type FoldConfig = Pick<AppConfig, 'instanceId' | 'projectionLeaseMs' | 'poisonEvents'>;

/**
 * A large import's fold, alongside its appends: where no instance of the service folds the read
 * models (this command takes every one's lease, and keeps it), each is rebuilt into a new
 * generation as the service catches up after a start far behind, in one pass over the events,
 * following the import's appends as they are made (their values taken as sealed here, not opened
 * again) and promoted once the import ends (see `until` in rebuild.ts). Reads meanwhile answer from
 * the live generations as they were, as during any rebuild; a service started meanwhile follows.
 * None when an instance of the service holds a lease: it folds the rows itself.
 */
export class FoldAlongside {
  private done = 0;
  private progressed?: () => void;
  private failed = false;
  private readonly renew: NodeJS.Timeout;
  private end!: () => void;
  private live!: Promise<void>;
  private rebuilt!: Promise<unknown>;

  private constructor(
    private readonly eventStore: EventStore,
    private readonly projectors: Projector[],
    config: FoldConfig,
    private readonly aheadMost: number,
  ) {
    this.renew = setInterval(() => {
      for (const p of projectors) p.takeLease().catch(() => undefined);
    }, config.projectionLeaseMs / 3);
  }

  /**
   * The fold, started, if this command could take every read model's lease (else none, every lease
   * given back); not where the store cannot count its events. `aheadMost`: the events the import
   * may have appended ahead of it before it waits (keepUp), the batches in flight: what the import
   * holds in memory, under the values the sealed store keeps of events appended here (APPENDED_KEPT),
   * which the fold takes rather than opening them again.
   */
  static async start(
    eventStore: EventStore,
    readStore: ReadStore,
    config: FoldConfig,
    aheadMost: number,
    signal: AbortSignal,
  ): Promise<FoldAlongside | undefined> {
    if (eventStore.eventsBetween(START, START) === null) return undefined;
    const lease = { holder: config.instanceId, ttlMs: Math.max(config.projectionLeaseMs, LEASE_MS) };
    const projectors = READ_MODELS.map((p) => new Projector(p, eventStore, readStore, lease));
    const taken: Projector[] = [];
    for (const projector of projectors) {
      if (!(await projector.takeLease().catch(() => false))) break;
      taken.push(projector);
    }
    if (taken.length < projectors.length) {
      for (const p of taken) await readStore.releaseLease(p.projection.schema.name, lease.holder).catch(() => undefined);
      return undefined;
    }
    const fold = new FoldAlongside(eventStore, projectors, config, aheadMost);
    const until = new Promise<void>((resolve) => (fold.end = resolve));
    let onLive!: () => void;
    fold.live = new Promise<void>((resolve) => (onLive = resolve));
    fold.rebuilt = rebuildProjections(READ_MODELS, eventStore, readStore, {
      signal,
      graceMs: GRACE_MS,
      until,
      park: config.poisonEvents === 'park',
      onProgress: ({ done }) => {
        fold.done = done;
        fold.progressed?.();
      },
      onLive: onLive,
    }).catch((error: unknown) => {
      // Left to the fold at the end (foldImported), which reads the events back.
      if (!signal.aborted) process.stderr.write(`Folding the rows as they came failed (${(error as Error).message}): the read models are folded at the end\n`);
      fold.failed = true;
      fold.progressed?.();
      onLive();
    });
    return fold;
  }

  /** Waits while the fold is more than `aheadMost` events behind `appended` (the import's last append). */
  async keepUp(appended: Position): Promise<void> {
    const behind = () => (this.eventStore.eventsBetween(START, appended) ?? 0) - this.done;
    while (!this.failed && behind() > this.aheadMost) await new Promise<void>((resolve) => (this.progressed = resolve));
  }

  /** The import is over: the fold catches up with the head and promotes its generations (then foldImported folds what came since). */
  async finish(): Promise<void> {
    this.end();
    await this.live;
    clearInterval(this.renew);
  }

  /** Once the replaced generations are dropped; given up with the signal. */
  async close(): Promise<void> {
    this.end();
    clearInterval(this.renew);
    await this.rebuilt;
  }
}

/**
 * Brings the read models (the records', the change feed's index) up to the import's rows as the
 * service does when it starts (ProjectionsService): where an instance of the service holds a read
 * model's lease, it folds and this waits for it; where none does, this takes the lease and folds,
 * by a rebuild when far behind (several times faster than folding into the live indexes), then
 * gives the lease back. It waits until the read models that follow the imported records' streams
 * (`last.streamId`, one of them) have folded the import's last record event (`last.position`):
 * not for the store's head, which may be an event of a stream none of them follows (a slug's, an
 * Idempotency-Key's of the service beside), and not for the other read models, which on
 * EventStoreDB (filtered by prefix) learn of positions past their own streams' events only at a
 * checkpoint the server sends every 32 events.
 */
export async function foldImported(
  eventStore: EventStore,
  readStore: ReadStore,
  config: Omit<AppConfig, 'accessTokens'>,
  last: { streamId: string; position: Position },
  signal: AbortSignal,
): Promise<void> {
  const head = last.position;
  const service = new ProjectionsService(READ_MODELS, eventStore, readStore, config as AppConfig);
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  const behind = () => Math.max(0, ...service.projectors.map((p) => (p.state === 'starting' ? null : eventStore.eventsBetween(p.checkpoint, head)) ?? 0));
  const rebuilding = () => service.projectors.some((p) => p.state === 'starting');
  const timer = setInterval(
    () =>
      process.stderr.write(
        `${tty ? '\r\x1b[K' : ''}Read models: ${rebuilding() ? 'rebuilding (far behind the events)' : `${count(behind())} events to fold`}${tty ? '' : '\n'}`,
      ),
    tty ? TTY_EVERY_MS : LINE_EVERY_MS,
  );
  try {
    await service.onApplicationBootstrap();
    // A read model caught up by a rebuild starts its projector once promoted.
    while (rebuilding() && !signal.aborted) await sleep(100);
    const failed = service.projectors.find((p) => p.state === 'failed');
    if (failed) throw failed.failure ?? new Error(`The read model ${failed.projection.name} stopped`);
    const reached = Promise.all(service.projectors.filter((p) => p.follows(last.streamId)).map((p) => p.waitFor(head, 24 * 3600_000)));
    await Promise.race([reached, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
    if (!signal.aborted)
      process.stderr.write(`${tty ? '\r\x1b[K' : ''}Read models and the change feed have every row (${duration((Date.now() - started) / 1000)})\n`);
  } finally {
    clearInterval(timer);
    await service.onModuleDestroy();
  }
}
