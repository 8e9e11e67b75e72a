import { createExample, record } from '../../../src/docs/examples';
import type { ApiRecordSpec } from '../../../src/docs/openapi';
import type { DomainEvent } from '../../../src/event-store/event-store.port';
import { validationFailed } from '../../../src/errors';
import { Email, Example, fieldNames, Text, updateBodyOf } from '../../../src/http/field-rules';
import {
  changedFields,
  Decider,
  evolveRecord,
  Fields,
  NoData,
  ownedRecord,
  RecordKind,
  RecordState,
  withoutEmpty,
  recordUpcasters,
} from '../../../src/records/record';
import { recordProjection } from '../../../src/records/record.projection';

/**
 * Suppliers: a kind of record the service does not have, defined here as a feature folder of src/
 * would define one, to show that a kind is its folder and its registration (supplier.kind.ts).
 * The parts a kind's folder holds, in one file: its events and decisions, its body (the field
 * rules), its read model, its view and its OpenAPI spec.
 */

export type SupplierEvent =
  | DomainEvent<'SupplierCreated', Fields>
  | DomainEvent<'SupplierUpdated', Fields>
  | DomainEvent<'SupplierDeleted', NoData>
  | DomainEvent<'SupplierErased', NoData>;

export type SupplierCommand =
  | { type: 'CreateSupplier'; data: { fields: Fields } }
  | { type: 'UpdateSupplier'; data: { accountId: string; fields: Fields } }
  | { type: 'DeleteSupplier'; data: { accountId: string } };

const SUPPLIER_EVENTS = {
  created: 'SupplierCreated',
  updated: 'SupplierUpdated',
  deleted: 'SupplierDeleted',
  erased: 'SupplierErased',
} satisfies Record<keyof RecordKind['events'], SupplierEvent['type']>;

export const SUPPLIER: RecordKind = { label: 'Supplier', streamPrefix: 'supplier', events: SUPPLIER_EVENTS, upcasters: recordUpcasters(SUPPLIER_EVENTS) };

/** A supplier needs a name: its own rule, as customers need an email or a mobile. */
function requireName(fields: Fields): void {
  if (!fields.name) throw validationFailed([{ field: 'name', message: 'name must be filled in' }]);
}

export const supplierDecider: Decider<RecordState | null, SupplierCommand, SupplierEvent> = {
  decide(command, state) {
    switch (command.type) {
      case 'CreateSupplier': {
        if (state) return [];
        requireName(command.data.fields);
        return [{ type: 'SupplierCreated', data: withoutEmpty(command.data.fields) }];
      }
      case 'UpdateSupplier': {
        const supplier = ownedRecord(SUPPLIER, state, command.data.accountId);
        requireName({ ...supplier.fields, ...command.data.fields });
        const changes = changedFields(supplier.fields, command.data.fields);
        return Object.keys(changes).length ? [{ type: 'SupplierUpdated', data: changes }] : [];
      }
      case 'DeleteSupplier':
        ownedRecord(SUPPLIER, state, command.data.accountId);
        return [{ type: 'SupplierDeleted', data: {} }];
    }
  },
  evolve: (state, event) => evolveRecord(SUPPLIER, state, event),
  initialState: () => null,
};

/** POST /v1/suppliers: the one list of a supplier's fields. */
export class CreateSupplierBody {
  @Text(255) @Example('Caspian Leaf Traders') name?: string | null;
  @Email() @Example('sales@caspianleaf.example') email?: string | null;
  @Text(255) @Example('Rasht') city?: string | null;
}

export class UpdateSupplierBody extends updateBodyOf(CreateSupplierBody) {}

export const SUPPLIER_FIELDS = fieldNames(CreateSupplierBody);

/** Lists filter by email (whole value) and city (any part of it). */
export const supplierProjection = recordProjection(SUPPLIER, { name: 'suppliers', filters: { email: 'exact-ci', city: 'contains-ci' } });

export function supplierView(supplier: RecordState) {
  const view: Record<string, string | number> = { id: supplier.id };
  for (const field of SUPPLIER_FIELDS) view[field] = supplier.fields[field] ?? '';
  view.created = supplier.created;
  return view;
}

const ID = '9d4c2b1a-0f3e-4d5c-8b7a-6e5f4d3c2b1a';
const CREATE = createExample(CreateSupplierBody);
const UPDATE = { city: 'Lahijan' };

export const SUPPLIER_API: ApiRecordSpec = {
  resource: 'Supplier',
  tag: 'Suppliers: where the goods come from',
  bodies: { create: CreateSupplierBody, update: UpdateSupplierBody },
  filters: supplierProjection.schema.filters,
  answers: { full: { name: 'Supplier', description: 'A supplier, as every response shows it.', fields: SUPPLIER_FIELDS } },
  examples: {
    id: ID,
    create: CREATE,
    update: UPDATE,
    full: supplierView(record(ID, CREATE)),
    short: supplierView(record(ID, CREATE)),
    updated: supplierView(record(ID, CREATE, UPDATE)),
    filters: { email: 'sales@caspianleaf.example', city: 'rasht' },
    history: [
      {
        event: 'SupplierCreated',
        revision: 0,
        occurred: '2026-11-22T03:11:25.920Z',
        actor: 'acme',
        changes: { name: { from: '', to: 'Caspian Leaf Traders' } },
      },
    ],
  },
  rules: { create: 'The name is required.' },
};
