import { DynamicModule, Inject, Module, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, workerShare } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { ProjectionsService } from '../projections/projections.service';
import { READ_STORE, ReadGenerations } from '../read-store/read-store.port';
import type { RecordKind } from '../records/record';
import { FeedCaps } from './feed-caps';
import { FeedCursorSecret } from './feed-cursor-secret';
import { FeedTail } from './feed-tail';
import { FeedController } from './feed.controller';
import { FEED } from './feed.projection';
import { FEED_KINDS, FeedPageHandler } from './feed.queries';

/** The change feed of `kinds` (GET /v1/events); its index is one of the read models (feedProjection). */
@Module({})
export class FeedModule implements OnModuleDestroy {
  constructor(@Inject(FeedTail) private readonly tail: FeedTail) {}

  static forRoot(kinds: RecordKind[]): DynamicModule {
    return {
      module: FeedModule,
      controllers: [FeedController],
      providers: [
        { provide: FEED_KINDS, useValue: kinds },
        {
          provide: FeedTail,
          useFactory: (projections: ProjectionsService, readStore: ReadGenerations) => {
            const projector = projections.projectors.find((p) => p.projection.name === FEED);
            if (!projector) throw new Error(`The change feed needs the ${FEED} read model among the projections`);
            return new FeedTail(projector, readStore);
          },
          inject: [ProjectionsService, READ_STORE],
        },
        {
          provide: FeedCaps,
          useFactory: (config: AppConfig, metrics: Metrics) =>
            new FeedCaps(workerShare(config.feedStreamsPerToken, config), workerShare(config.feedStreamsPerAccount, config), (change) =>
              metrics.feedOpen.inc(change),
            ),
          inject: [APP_CONFIG, Metrics],
        },
        FeedCursorSecret,
        FeedPageHandler,
      ],
    };
  }

  /** Consumers still waiting are answered (long-polls) or ended (streams). */
  onModuleDestroy(): void {
    this.tail.close();
  }
}
