import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AuditModule } from './audit/audit.module';
import type { AppConfig } from './config/config';
import { FeedModule } from './feed/feed.module';
import { MetricsModule } from './health/metrics.module';
import { HealthModule } from './health/health.module';
import { checkedKinds, type RecordKindDefinition, type RecordKindRoutes } from './kinds/record-kind-definition';
import { ProjectionsModule } from './projections/projections.module';
import { readModelsOf } from './read-models';
import { StoresModule } from './stores/stores.module';

@Module({})
export class AppModule {
  /** The service keeping the records of `definitions`, whose `routes` (routesOf) are loaded. */
  static forRoot(config: AppConfig, definitions: readonly RecordKindDefinition[], routes: RecordKindRoutes[]): DynamicModule {
    const kinds = checkedKinds(definitions);
    return {
      module: AppModule,
      // Routes are matched in the order their modules come: the /v1 routes first, since every
      // route an /v1 request walks past costs a match.
      imports: [
        CqrsModule.forRoot(),
        ...routes.map((kind) => kind.module),
        FeedModule.forRoot(kinds),
        AuditModule,
        MetricsModule,
        StoresModule.forRoot(config, kinds),
        ProjectionsModule.forRoot(readModelsOf(definitions)),
        HealthModule,
      ],
    };
  }
}
