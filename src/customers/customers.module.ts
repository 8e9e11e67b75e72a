import { APP_CONFIG, AppConfig } from '../config/config';
import { Inject, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { RecordEraser } from '../records/record-eraser';
import { READ_STORE, ReadDocuments } from '../read-store/read-store.port';
import { customerProjection } from './customer.projection';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { IdempotentCreates } from '../idempotency/idempotent-creates';
import { RecordWriter } from '../records/record-writer';
import { CUSTOMER } from './customer.decider';
import {
  CreateCustomerHandler,
  CUSTOMER_ERASER,
  CUSTOMER_WRITER,
  DeleteCustomerHandler,
  EraseCustomerHandler,
  UpdateCustomerHandler,
} from './customer.commands';
import { GetCustomerHandler, ListCustomersHandler } from './customer.queries';
import { CustomersController } from './customers.controller';

@Module({
  controllers: [CustomersController],
  providers: [
    IdempotentCreates,
    {
      provide: CUSTOMER_WRITER,
      useFactory: (eventStore: EventStore, projections: ProjectionsService, keys: DataKeys, config: AppConfig) =>
        new RecordWriter(CUSTOMER, eventStore, projections, keys, { keepAtMost: config.recordCacheSize }),
      inject: [EVENT_STORE, ProjectionsService, DATA_KEYS, APP_CONFIG],
    },
    {
      provide: CUSTOMER_ERASER,
      useFactory: (writer: RecordWriter, keys: DataKeys, readStore: ReadDocuments) =>
        new RecordEraser(CUSTOMER, customerProjection.schema.name, writer, keys, readStore),
      inject: [CUSTOMER_WRITER, DATA_KEYS, READ_STORE],
    },
    CreateCustomerHandler,
    UpdateCustomerHandler,
    DeleteCustomerHandler,
    EraseCustomerHandler,
    GetCustomerHandler,
    ListCustomersHandler,
  ],
})
export class CustomersModule implements OnApplicationBootstrap {
  constructor(@Inject(CUSTOMER_ERASER) private readonly eraser: RecordEraser) {}

  /** Erasures a stop interrupted are finished before the service answers. */
  async onApplicationBootstrap(): Promise<void> {
    await this.eraser
      .finishPending()
      .catch((error) => new Logger('CustomersModule').error(`Could not finish interrupted erasures: ${(error as Error).message}`));
  }
}
