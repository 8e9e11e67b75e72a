import { FieldFault, validationFailed } from '../errors';

export interface ListQuery {
  offset: number;
  limit: number;
  /** Only the filters given with a non-empty value. */
  filters: Record<string, string>;
}

type RawQuery = Record<string, unknown>;

/**
 * Paging and filters of CONTRACT.md "Lists": limit 1..100 (default 10), offset >= 0 or page >= 1
 * (page N is offset (N-1)*limit; both at once is an error). Unknown parameters are ignored.
 */
export function parseListQuery(query: RawQuery, filterNames: readonly string[]): ListQuery {
  const faults: FieldFault[] = [];
  const integer = (name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined => {
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
  };
  const limit = integer('limit', 1, 100) ?? 10;
  const offset = integer('offset', 0);
  const page = integer('page', 1);
  if (query.offset !== undefined && query.page !== undefined) {
    faults.push({ field: 'page', message: 'send either offset or page, not both' });
  }
  const filters: Record<string, string> = {};
  for (const name of filterNames) {
    const value = single(query, name, faults);
    if (value) filters[name] = value;
  }
  if (faults.length) throw validationFailed(faults);
  return { limit, offset: offset ?? (page !== undefined ? (page - 1) * limit : 0), filters };
}

function single(query: RawQuery, name: string, faults: FieldFault[]): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === 'string') return value;
  faults.push({ field: name, message: `${name} must be given once` });
  return undefined;
}
