import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import type { AppConfig } from './config/config';
import { BenchCeilingController } from './http/bench-ceiling.controller';
import { customerProjection } from './customers/customer.projection';
import { CustomersModule } from './customers/customers.module';
import { profileProjection } from './profiles/profile.projection';
import { ProfilesModule } from './profiles/profiles.module';
import { ProjectionsModule } from './projections/projections.module';
import { StorageModule } from './storage/storage.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        CqrsModule.forRoot(),
        StorageModule.forRoot(config),
        ProjectionsModule.forRoot([profileProjection, customerProjection]),
        ProfilesModule,
        CustomersModule,
      ],
      controllers: config.benchCeiling ? [BenchCeilingController] : [],
    };
  }
}
