import { fieldNames } from '../http/field-rules';
import type { RecordState } from '../records/record';
import { CreateCustomerBody } from './customer.body';

/** Every field of the create body, in its order. */
export const CUSTOMER_FIELDS = fieldNames(CreateCustomerBody);
/** The view's own choice of fields, in the order the answers have always had. */
export const CUSTOMER_SHORT_FIELDS = ['name', 'company', 'address', 'tel', 'email', 'mobile'];

/**
 * A customer as responses show it: id, every field and created after a create, the short set (id,
 * name, company, address, tel, email, mobile, created) everywhere else. No value is ''.
 */
export type CustomerViewShape = 'full' | 'short';

export function customerView(customer: RecordState, shape: CustomerViewShape) {
  const view: Record<string, string | number> = { id: customer.id };
  for (const field of shape === 'full' ? CUSTOMER_FIELDS : CUSTOMER_SHORT_FIELDS) view[field] = customer.fields[field] ?? '';
  view.created = customer.created;
  return view;
}
