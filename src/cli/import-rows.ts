import { CreateCustomerBody } from '../customers/customer.body';
import { CUSTOMER, decideCreateCustomer } from '../customers/customer.decider';
import { FieldFault, Refusal } from '../errors';
import type { DomainEvent, StoredEvent } from '../event-store/event-store.port';
import { occurredAt } from '../event-store/event-store.port';
import { asciiDigits } from '../http/field-rules';
import { BodyClass, checkBody } from '../http/body-validation.pipe';
import { ProfileBody } from '../profiles/profile.body';
import { decideCreateProfile, PROFILE } from '../profiles/profile.decider';
import type { Fields, RecordKind } from '../records/record';
import type { FileRow } from './import-file';

/** What the import takes of a kind of record: its create body (the API's rules and messages) and its create decision. */
export interface ImportKind {
  /** As the command line names it. */
  name: 'customers' | 'profiles';
  kind: RecordKind;
  body: BodyClass;
  /** The create's decision on a record with no stream: its Created event, or the refusal the API answers. */
  decide: (fields: Fields) => DomainEvent[];
}

export const IMPORT_KINDS: ImportKind[] = [
  { name: 'profiles', kind: PROFILE, body: ProfileBody, decide: (fields) => decideCreateProfile(null, fields) },
  { name: 'customers', kind: CUSTOMER, body: CreateCustomerBody, decide: (fields) => decideCreateCustomer(null, fields) },
];

/** A row that passed every check: the record's id, its creation time (epoch seconds) and the Created event's fields. */
export interface CheckedRow {
  line: number;
  id: string;
  created: number;
  fields: Fields;
}

/** A row refused, by line number and field. */
export interface RefusedRow {
  line: number;
  faults: FieldFault[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The latest `created` taken: a record cannot have been created after the import that moves it in. */
const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * A row checked as the API checks a create (checkBody: the same fields, rules and messages; then
 * the kind's create decision, such as a customer's email or mobile), plus the two fields an export
 * adds: `id` (the record's UUID, 36 characters, kept) and `created` (whole seconds since the epoch,
 * as the API answers it). Every fault of the row is reported together.
 */
export function checkRow(kind: ImportKind, row: FileRow): CheckedRow | RefusedRow {
  if ('unreadable' in row) return { line: row.line, faults: [{ field: '(row)', message: row.unreadable }] };
  const { id, created, ...body } = row.values;
  const faults: FieldFault[] = [];
  if (typeof id !== 'string' || !UUID.test(id)) {
    faults.push({ field: 'id', message: `id must be the record's id: a UUID of 36 characters${id === undefined || id === '' ? '; the row has none' : ''}` });
  }
  const seconds = secondsOf(created);
  if (seconds === undefined) {
    faults.push({
      field: 'created',
      message: `created must be when the record was created, in whole seconds since the epoch (as the API answers it), not in the future${created === undefined || created === '' ? '; the row has none' : ''}`,
    });
  }
  const checked = checkBody(kind.body, body);
  let fields: Fields | undefined;
  if ('faults' in checked) faults.push(...checked.faults);
  else {
    try {
      fields = kind.decide(checked.fields)[0].data as Fields;
    } catch (error) {
      if (!(error instanceof Refusal) || !error.details) throw error;
      faults.push(...error.details);
    }
  }
  if (faults.length > 0 || !fields) return { line: row.line, faults };
  return { line: row.line, id: (id as string).toLowerCase(), created: seconds!, fields };
}

function secondsOf(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(asciiDigits(value)) ? Number(asciiDigits(value)) : NaN;
  return Number.isSafeInteger(n) && n >= 0 && n <= nowSeconds() ? n : undefined;
}

/**
 * Why a row whose id has a stream already is not imported (refused), or nothing when that stream
 * holds this very record as the row gives it (skipped: imported before, by an earlier run). Compared
 * with the record as it was created: its account, its creation time and every field's value.
 * `first` and `last` are the stream's first and last events, opened.
 */
export function differences(kind: RecordKind, row: CheckedRow, accountId: string, first: StoredEvent, last: StoredEvent): FieldFault[] {
  if (first.metadata.accountId !== accountId) return [{ field: 'id', message: 'id is the id of a record of another account' }];
  if (last.type === kind.events.erased) return [{ field: 'id', message: 'id is the id of a record that was erased: it is not imported again' }];
  const faults: FieldFault[] = [];
  if (Math.floor(occurredAt(first).getTime() / 1000) !== row.created) {
    faults.push({ field: 'created', message: 'a record with this id is stored with another created' });
  }
  const stored = first.data as Fields;
  for (const field of new Set([...Object.keys(stored), ...Object.keys(row.fields)])) {
    if ((stored[field] ?? '') !== (row.fields[field] ?? '')) faults.push({ field, message: `a record with this id is stored with another value of ${field}` });
  }
  return faults;
}
