import { FieldFault, validationFailed } from '../errors';
import { asciiDigits, DIGIT_FIELDS } from './field-rules';

export interface ListQuery {
  offset: number;
  limit: number;
  /** Only the filters given with a non-empty value. */
  filters: Record<string, string>;
}

type RawQuery = Record<string, unknown>;

const PAGING = ['limit', 'offset', 'page'];

/**
 * Paging and filters of CONTRACT.md "Lists": limit 1..100 (default 10; histories take 100), offset
 * >= 0 or page >= 1 (page N is offset (N-1)*limit; both at once is an error). Unknown parameters
 * are ignored; the digit filters (`tel`, `mobile`) take Persian and Arabic-Indic digits as ASCII ones.
 */
export function parseListQuery(query: RawQuery, filterNames: readonly string[], defaultLimit = 10): ListQuery {
  const faults: FieldFault[] = [];
  refuseStructured(query, [...PAGING, ...filterNames], faults);
  const limit = integerParameter(query, 'limit', faults, 1, 100) ?? defaultLimit;
  const offset = integerParameter(query, 'offset', faults, 0);
  const page = integerParameter(query, 'page', faults, 1);
  if (query.offset !== undefined && query.page !== undefined) {
    faults.push({ field: 'page', message: 'send either offset or page, not both' });
  }
  const filters: Record<string, string> = {};
  for (const name of filterNames) {
    const value = single(query, name, faults);
    // Digits are stored in ASCII; a client may type them in Persian or Arabic-Indic.
    if (value) filters[name] = DIGIT_FIELDS.has(name) ? asciiDigits(value) : value;
  }
  if (faults.length) throw validationFailed(faults);
  return { limit, offset: offset ?? (page !== undefined ? (page - 1) * limit : 0), filters };
}

/** `?as_of=<epoch seconds>` of an item read: a non-negative integer, or undefined when absent. */
export function parseAsOf(query: RawQuery): number | undefined {
  const faults: FieldFault[] = [];
  refuseStructured(query, ['as_of'], faults);
  const asOf = integerParameter(query, 'as_of', faults, 0);
  if (faults.length) throw validationFailed(faults);
  return asOf;
}

/** An integer parameter from min to max, or undefined when absent; a fault naming it otherwise. */
function integerParameter(query: RawQuery, name: string, faults: FieldFault[], min: number, max = Number.MAX_SAFE_INTEGER) {
  const raw = single(query, name, faults);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    faults.push({
      field: name,
      message: max === Number.MAX_SAFE_INTEGER ? `${name} must be an integer >= ${min}` : `${name} must be an integer from ${min} to ${max}`,
    });
    return undefined;
  }
  return Number(raw);
}

/**
 * `email[]=x`, `company[a]=b`: the query parser (Express's "simple") keeps such names as sent, so
 * they would pass for unknown parameters and be ignored, and a filtered list would list the whole
 * account. A known parameter's name followed by `[` is refused, once per name.
 */
function refuseStructured(query: RawQuery, names: readonly string[], faults: FieldFault[]): void {
  const refused = new Set<string>();
  for (const key of Object.keys(query)) {
    const bracket = key.indexOf('[');
    const name = key.slice(0, bracket);
    if (bracket <= 0 || !names.includes(name) || refused.has(name)) continue;
    refused.add(name);
    faults.push({ field: name, message: `${name} takes a single value, not a list or an object (${name}[…])` });
  }
}

function single(query: RawQuery, name: string, faults: FieldFault[]): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === 'string') return value;
  faults.push({ field: name, message: `${name} must be given once` });
  return undefined;
}
