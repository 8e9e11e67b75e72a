import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AuditModule } from './audit/audit.module';
import type { AppConfig } from './config/config';
import { CustomersModule } from './customers/customers.module';
import { FeedModule } from './feed/feed.module';
import { MetricsModule } from './health/metrics.module';
import { ProfilesModule } from './profiles/profiles.module';
import { HealthModule } from './health/health.module';
import { ProjectionsModule } from './projections/projections.module';
import { READ_MODELS, RECORD_KINDS } from './read-models';
import { StoresModule } from './stores/stores.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      // Routes are matched in the order their modules come: the /v1 routes first, since every
      // route an /v1 request walks past costs a match.
      imports: [
        CqrsModule.forRoot(),
        CustomersModule,
        ProfilesModule,
        FeedModule.forRoot(RECORD_KINDS),
        AuditModule,
        MetricsModule,
        StoresModule.forRoot(config, RECORD_KINDS),
        ProjectionsModule.forRoot(READ_MODELS),
        HealthModule,
      ],
    };
  }
}
