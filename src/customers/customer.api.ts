import { createExample, record } from '../docs/examples';
import type { ApiRecordSpec } from '../docs/openapi';
import { CreateCustomerBody, UpdateCustomerBody } from './customer.body';
import { customerProjection } from './customer.projection';
import { CUSTOMER_FIELDS, CUSTOMER_SHORT_FIELDS, customerView } from './customer.view';

/** `a, b and c`. */
const listed = (names: readonly string[]) => (names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names.join(''));

const ID = '6f0c9a7e-5b1d-4e2f-8a3c-1d2e3f4a5b6c';
const CREATE = createExample(CreateCustomerBody);
const UPDATE = { mobile: '09351112233', company: '' };

/** /v1/customers in the OpenAPI document (docs/openapi.ts). */
export const CUSTOMER_API: ApiRecordSpec = {
  resource: 'Customer',
  tag: 'Customers: the buyer records',
  bodies: { create: CreateCustomerBody, update: UpdateCustomerBody },
  filters: customerProjection.schema.filters,
  answers: {
    full: { name: 'Customer', description: 'A customer as a create answers it: all twelve fields.', fields: CUSTOMER_FIELDS },
    short: { name: 'CustomerShort', description: 'A customer as list, read and update answer it: the short field set.', fields: CUSTOMER_SHORT_FIELDS },
  },
  examples: {
    id: ID,
    create: CREATE,
    update: UPDATE,
    full: customerView(record(ID, CREATE), 'full'),
    short: customerView(record(ID, CREATE), 'short'),
    updated: customerView(record(ID, CREATE, UPDATE), 'short'),
    filters: { email: 'ada@example.com', mobile: '09121234567', company: 'engines' },
    history: [
      {
        event: 'CustomerCreated',
        revision: 0,
        occurred: '2026-11-22T03:11:25.920Z',
        actor: 'acme',
        changes: { name: { from: '', to: 'Ada Lovelace' }, email: { from: '', to: 'ada@example.com' }, mobile: { from: '', to: '09121234567' } },
      },
      {
        event: 'CustomerUpdated',
        revision: 1,
        occurred: '2026-11-22T03:11:32.200Z',
        actor: 'acme',
        changes: { mobile: { from: '09121234567', to: '09351112233' }, company: { from: 'Analytical Engines', to: '' } },
      },
      { event: 'CustomerDeleted', revision: 2, occurred: '2026-11-22T03:11:34.067Z', actor: 'acme', changes: {} },
    ],
  },
  rules: {
    create: 'Every field is optional, but at least one of email and mobile must be filled in.',
    update: `${listed(UpdateCustomerBody.createOnly)} cannot be changed (400); email or mobile must stay filled in.`,
  },
};
