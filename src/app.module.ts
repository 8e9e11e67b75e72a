import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { ThrottlerModule } from '@nestjs/throttler';
import { AuditModule } from './audit/audit.module';
import type { AppConfig } from './config/config';
import { CustomersModule } from './customers/customers.module';
import { RateLimitGuard } from './http/rate-limit.guard';
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
        ThrottlerModule.forRoot({
          throttlers: [{ ttl: config.rateLimitWindowSeconds * 1000, limit: config.rateLimitRequests }],
          // No X-RateLimit-* headers: the interface has none; a 429 carries Retry-After.
          setHeaders: false,
        }),
      ],
      providers: config.rateLimitRequests > 0 ? [{ provide: APP_GUARD, useClass: RateLimitGuard }] : [],
    };
  }
}
