import { Module } from '@nestjs/common';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { IdempotentCreates } from '../idempotency/idempotent-creates';
import { RecordWriter } from '../records/record-writer';
import { CUSTOMER } from './customer.decider';
import { CreateCustomerHandler, CUSTOMER_WRITER, DeleteCustomerHandler, UpdateCustomerHandler } from './customer.commands';
import { GetCustomerHandler, ListCustomersHandler } from './customer.queries';
import { CustomersController } from './customers.controller';

@Module({
  controllers: [CustomersController],
  providers: [
    IdempotentCreates,
    {
      provide: CUSTOMER_WRITER,
      useFactory: (eventStore: EventStore, projections: ProjectionsService) => new RecordWriter(CUSTOMER, eventStore, projections),
      inject: [EVENT_STORE, ProjectionsService],
    },
    CreateCustomerHandler,
    UpdateCustomerHandler,
    DeleteCustomerHandler,
    GetCustomerHandler,
    ListCustomersHandler,
  ],
})
export class CustomersModule {}
