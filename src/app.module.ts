import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { AuditModule } from './audit/audit.module';
import type { AppConfig } from './config/config';
import { CustomersModule } from './customers/customers.module';
import { MetricsModule } from './metrics/metrics.module';
import { ProfilesModule } from './profiles/profiles.module';
import { HealthModule } from './health/health.module';
import { ProjectionsModule } from './projections/projections.module';
import { READ_MODELS } from './read-models';
import { StorageModule } from './storage/storage.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CqrsModule.forRoot(),
        MetricsModule,
        StorageModule.forRoot(config),
        ProjectionsModule.forRoot(READ_MODELS),
        HealthModule,
        ProfilesModule,
        CustomersModule,
        AuditModule,
      ],
    };
  }
}
