import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { ApiError } from '../errors';
import { EVENT_STORE, EventStore, Position } from '../event-store/event-store.port';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { Projection, PROJECTIONS } from './projection';
import { Projector } from './projector';
import { REBUILD_GRACE_MS } from './rebuild';

/**
 * Runs one projector per read model for the life of the app (folding, or following the instance
 * that holds the read model's lease), and lets writes wait for them.
 */
@Injectable()
export class ProjectionsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ProjectionsService.name);
  readonly projectors: Projector[];

  constructor(
    @Inject(PROJECTIONS) projections: Projection[],
    @Inject(EVENT_STORE) eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    const lease = { holder: config.instanceId, ttlMs: config.projectionLeaseMs };
    this.projectors = projections.map((p) => new Projector(p, eventStore, readStore, lease));
  }

  async onApplicationBootstrap(): Promise<void> {
    await Promise.all(this.projectors.map((p) => p.start()));
    // What a rebuild stopped during its grace period left: storage no read has used since.
    for (const p of this.projectors) await this.readStore.dropRetired(p.projection.schema.name, REBUILD_GRACE_MS);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.projectors.map((p) => p.stop()));
  }

  /**
   * Read-your-writes: resolves once every read model that follows `streamId` has folded the write
   * at `position`, or answers 503 after the configured bound (the write itself is saved either way).
   * Models of other streams need not wait: a subscription filtered by prefix (EventStoreDB) only
   * learns of foreign positions at its next checkpoint.
   */
  async waitFor(streamId: string, position: Position): Promise<void> {
    const following = this.projectors.filter((p) => streamId.startsWith(p.streamPrefix));
    try {
      await Promise.all(following.map((p) => p.waitFor(position, this.config.readYourWritesTimeoutMs)));
    } catch (error) {
      this.logger.warn(`Read models behind a write: ${(error as Error).message}`);
      throw new ApiError(
        'UNAVAILABLE',
        'The change was saved, but the read models have not caught up with it yet. Read it again shortly.',
        undefined,
        1,
      );
    }
  }
}
