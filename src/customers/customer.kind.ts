import type { RecordKindDefinition } from '../kinds/record-kind-definition';
import { CUSTOMER_API } from './customer.api';
import { CUSTOMER } from './customer.decider';
import { customerProjection } from './customer.projection';
import { CustomersModule } from './customers.module';

/** Customers, as the service registers them (src/record-kinds.ts). */
export const CUSTOMERS: RecordKindDefinition = { kind: CUSTOMER, readModel: customerProjection, api: CUSTOMER_API, module: CustomersModule };
