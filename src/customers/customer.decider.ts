import type { DomainEvent } from '../event-store/event-store.port';
import { validationFailed } from '../errors';
import { changedFields, Decider, evolveRecord, recordUpcasters, Fields, NoData, ownedRecord, RecordKind, RecordState, withoutEmpty } from '../records/record';

/** Where every customer change is decided: `customerDecider`, pure functions of the folded record and the command. */

/** What a customer's stream holds. Stored as written: a type or a payload never changes. */
export type CustomerEvent =
  /** The fields that have a value. */
  | DomainEvent<'CustomerCreated', Fields>
  /** Only the fields that change; '' clears one. */
  | DomainEvent<'CustomerUpdated', Fields>
  | DomainEvent<'CustomerDeleted', NoData>
  /** Appended by RecordEraser (decideErasure, shared by both kinds), folded here like the others. */
  | DomainEvent<'CustomerErased', NoData>;

/** What may be asked of a customer; `accountId` is the account asking. Erasure is RecordEraser's: its key goes first. */
export type CustomerCommand =
  | { type: 'CreateCustomer'; data: { fields: Fields } }
  | { type: 'UpdateCustomer'; data: { accountId: string; fields: Fields } }
  | { type: 'DeleteCustomer'; data: { accountId: string } };

// Checked against CustomerEvent, so that evolve folds the events decide appends.
const CUSTOMER_EVENTS = {
  created: 'CustomerCreated',
  updated: 'CustomerUpdated',
  deleted: 'CustomerDeleted',
  erased: 'CustomerErased',
} satisfies Record<keyof RecordKind['events'], CustomerEvent['type']>;

export const CUSTOMER: RecordKind = {
  label: 'Customer',
  streamPrefix: 'customer',
  events: CUSTOMER_EVENTS,
  upcasters: recordUpcasters(CUSTOMER_EVENTS),
};

export const customerDecider: Decider<RecordState | null, CustomerCommand, CustomerEvent> = {
  decide(command, state) {
    switch (command.type) {
      case 'CreateCustomer':
        return decideCreateCustomer(state, command.data.fields);
      case 'UpdateCustomer':
        return decideUpdateCustomer(state, command.data.accountId, command.data.fields);
      case 'DeleteCustomer':
        return decideDeleteCustomer(state, command.data.accountId);
    }
  },
  evolve: (state, event) => evolveRecord(CUSTOMER, state, event),
  initialState: () => null,
};

export function decideCreateCustomer(state: RecordState | null, fields: Fields): CustomerEvent[] {
  // The service picks ids, so an existing one is an idempotent retry re-running its create: done already.
  if (state) return [];
  requireEmailOrMobile(fields);
  return [{ type: 'CustomerCreated', data: withoutEmpty(fields) }];
}

/** Appends only the fields that really change; nothing when nothing does. */
export function decideUpdateCustomer(state: RecordState | null, accountId: string, update: Fields): CustomerEvent[] {
  const customer = ownedRecord(CUSTOMER, state, accountId);
  requireEmailOrMobile({ ...customer.fields, ...update });
  const changes = changedFields(customer.fields, update);
  return Object.keys(changes).length ? [{ type: 'CustomerUpdated', data: changes }] : [];
}

export function decideDeleteCustomer(state: RecordState | null, accountId: string): CustomerEvent[] {
  ownedRecord(CUSTOMER, state, accountId);
  return [{ type: 'CustomerDeleted', data: {} }];
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
