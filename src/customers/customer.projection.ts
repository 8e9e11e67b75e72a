import { recordProjection } from '../records/record.projection';
import { CUSTOMER } from './customer.decider';

/** Where a customer's read model row is written: the `customers` collection, filtered as lists need. */
export const customerProjection = recordProjection(CUSTOMER, {
  name: 'customers',
  filters: { email: 'exact-ci', mobile: 'exact', company: 'contains-ci' },
});

export const CUSTOMER_FILTERS = Object.keys(customerProjection.schema.filters);
