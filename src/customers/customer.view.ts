import type { RecordState } from '../records/record';

export const CUSTOMER_FIELDS = ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'];
export const CUSTOMER_SHORT_FIELDS = ['name', 'company', 'address', 'tel', 'email', 'mobile'];

/**
 * A customer as responses show it: all twelve fields after a create, the short set (id, name,
 * company, address, tel, email, mobile, created) everywhere else. No value is ''.
 */
export type CustomerViewShape = 'full' | 'short';

export function customerView(customer: RecordState, shape: CustomerViewShape) {
  const view: Record<string, string | number> = { id: customer.id };
  for (const field of shape === 'full' ? CUSTOMER_FIELDS : CUSTOMER_SHORT_FIELDS) view[field] = customer.fields[field] ?? '';
  view.created = customer.created;
  return view;
}
