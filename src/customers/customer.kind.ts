import type { RecordKindDefinition } from '../kinds/record-kind-definition';
import { CUSTOMER } from './customer.decider';
import { customerProjection } from './customer.projection';

/** Customers, as the service registers them (src/record-kinds.ts). */
export const CUSTOMERS: RecordKindDefinition = {
  kind: CUSTOMER,
  readModel: customerProjection,
  // Loaded when the app starts: the CLI needs the kind and its read model alone.
  routes: async () => ({ module: (await import('./customers.module')).CustomersModule, api: (await import('./customer.api')).CUSTOMER_API }),
};
