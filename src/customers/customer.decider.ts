import type { DomainEvent } from '../event-store/event-store.port';
import { validationFailed } from '../errors';
import { changedFields, Fields, ownedRecord, recordEvents, RecordKind, RecordState } from '../records/record';

/** Where every customer change is decided: pure functions of the folded record and the request. */

export const CUSTOMER: RecordKind = {
  label: 'Customer',
  streamPrefix: 'customer',
  events: { created: 'CustomerCreated', updated: 'CustomerUpdated', deleted: 'CustomerDeleted', erased: 'CustomerErased' },
};

const events = recordEvents(CUSTOMER);

export function decideCreateCustomer(state: RecordState | null, fields: Fields): DomainEvent[] {
  // The service picks ids, so an existing one is an idempotent retry re-running its create: done already.
  if (state) return [];
  requireEmailOrMobile(fields);
  return [events.created(fields)];
}

/** Appends only the fields that really change; nothing when nothing does. */
export function decideUpdateCustomer(state: RecordState | null, accountId: string, update: Fields): DomainEvent[] {
  const customer = ownedRecord(CUSTOMER, state, accountId);
  requireEmailOrMobile({ ...customer.fields, ...update });
  const changes = changedFields(customer.fields, update);
  return Object.keys(changes).length ? [events.updated(changes)] : [];
}

export function decideDeleteCustomer(state: RecordState | null, accountId: string): DomainEvent[] {
  ownedRecord(CUSTOMER, state, accountId);
  return [events.deleted()];
}


/** A customer must stay reachable: at least one of email and mobile, after the change. */
function requireEmailOrMobile(fields: Fields): void {
  if (!fields.email && !fields.mobile) {
    const message = 'at least one of email and mobile must be filled in';
    throw validationFailed([
      { field: 'email', message },
      { field: 'mobile', message },
    ]);
  }
}
