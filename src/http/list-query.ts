import type { Response } from 'express';
import { FieldFault, validationFailed } from '../errors';
import { asciiDigits, DIGIT_FIELDS } from './field-rules';

export interface ListQuery {
  offset: number;
  limit: number;
  /** Only the filters given with a non-empty value. */
  filters: Record<string, string>;
  /** From `after`: only records created before the one this creation order (`seq`) names. */
  after?: number;
}

type RawQuery = Record<string, unknown>;

const PAGING = ['limit', 'offset', 'page', 'after'];

/**
 * How far offset (or page) may reach into a list: a store skips what it skips by reading it, so a
 * deeper page would cost as much as the records before it. Past it, `after` pages at any depth.
 */
export const MAX_LIST_OFFSET = 10_000;

/** The `after` of the page that follows one ending with the record created at `seq` (its X-Next-Cursor). */
export const listCursor = (seq: number) => Buffer.from(`seq:${seq}`).toString('base64url');

/**
 * The headers of a list page: X-Total-Count (COUNT_LIMIT at most, with X-Total-Count-Capped: true
 * when more match) and, on a full page, X-Next-Cursor.
 */
export function setListHeaders(res: Response, { total, capped, next }: { total: number; capped: boolean; next?: string }): void {
  res.setHeader('X-Total-Count', String(total));
  if (capped) res.setHeader('X-Total-Count-Capped', 'true');
  if (next) res.setHeader('X-Next-Cursor', next);
}

/**
 * A full page's X-Next-Cursor, from the last record the store gave (before any is left out of the
 * answer, so the next page starts after it all the same); none once a page comes back short.
 */
export const nextCursor = (documents: { seq: number }[], limit: number) =>
  documents.length === limit && limit > 0 ? listCursor(documents[documents.length - 1].seq) : undefined;

function fromCursor(cursor: string): number | undefined {
  const match = /^seq:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  return match && listCursor(Number(match[1])) === cursor ? Number(match[1]) : undefined;
}

/**
 * Paging and filters of a list (docs/api.md "Lists"): limit 1..100 (default 10; histories take
 * 100), offset >= 0 or page >= 1 (page N is offset (N-1)*limit; both at once is an error). Unknown
 * parameters are ignored; the digit filters (`tel`, `mobile`) take Persian and Arabic-Indic digits
 * as ASCII ones. With `cursor` (record lists, not histories, whose pages read only their events),
 * offsets reach MAX_LIST_OFFSET at most, and `after` (an X-Next-Cursor) pages past it.
 */
export function parseListQuery(query: RawQuery, filterNames: readonly string[], defaultLimit = 10, { cursor = false } = {}): ListQuery {
  const faults: FieldFault[] = [];
  refuseStructured(query, [...PAGING, ...filterNames], faults);
  const limit = integerParameter(query, 'limit', faults, 1, 100) ?? defaultLimit;
  const offset = integerParameter(query, 'offset', faults, 0);
  const page = integerParameter(query, 'page', faults, 1);
  if (query.offset !== undefined && query.page !== undefined) {
    faults.push({ field: 'page', message: 'send either offset or page, not both' });
  }
  const skipped = offset ?? (page !== undefined ? (page - 1) * limit : 0);
  let after: number | undefined;
  if (cursor) {
    const sent = single(query, 'after', faults);
    if (sent !== undefined) {
      after = fromCursor(sent);
      if (after === undefined) faults.push({ field: 'after', message: 'after must be an X-Next-Cursor value the service gave' });
      if (query.offset !== undefined || query.page !== undefined) faults.push({ field: 'after', message: 'send either after or offset/page, not both' });
    }
    if (skipped > MAX_LIST_OFFSET) {
      faults.push({
        field: query.page !== undefined ? 'page' : 'offset',
        message: `a list skips at most ${MAX_LIST_OFFSET} records (offset, or (page-1)*limit); page further with after, the X-Next-Cursor of the page before`,
      });
    }
  }
  const filters: Record<string, string> = {};
  for (const name of filterNames) {
    const value = single(query, name, faults);
    // Digits are stored in ASCII; a client may type them in Persian or Arabic-Indic.
    if (value) filters[name] = DIGIT_FIELDS.has(name) ? asciiDigits(value) : value;
  }
  if (faults.length) throw validationFailed(faults);
  return { limit, offset: skipped, filters, ...(after !== undefined ? { after } : {}) };
}

/** `?as_of=<epoch seconds>` of an item read: a non-negative integer, or undefined when absent. */
export function parseAsOf(query: RawQuery): number | undefined {
  const faults: FieldFault[] = [];
  refuseStructured(query, ['as_of'], faults);
  const asOf = integerParameter(query, 'as_of', faults, 0);
  if (faults.length) throw validationFailed(faults);
  return asOf;
}

/** The change feed's query (docs/api.md "Change feed"). */
export interface FeedQuery {
  /** As sent: the feed opens it (a cursor is sealed for its account). */
  after?: string;
  limit: number;
  /** Seconds a page with nothing new waits for news. */
  wait: number;
}

export const FEED_LIMIT = { default: 100, max: 1000 };
export const FEED_MAX_WAIT_SECONDS = 30;

/** `after`, `limit` 1 to 1000 (default 100), `wait` 0 to 30 seconds (default 0). */
export function parseFeedQuery(query: RawQuery): FeedQuery {
  const faults: FieldFault[] = [];
  refuseStructured(query, ['after', 'limit', 'wait'], faults);
  const limit = integerParameter(query, 'limit', faults, 1, FEED_LIMIT.max) ?? FEED_LIMIT.default;
  const wait = integerParameter(query, 'wait', faults, 0, FEED_MAX_WAIT_SECONDS) ?? 0;
  const after = single(query, 'after', faults);
  if (after === '') faults.push({ field: 'after', message: 'after must be a cursor the feed gave (X-Next-Cursor, or an entry id)' });
  if (faults.length) throw validationFailed(faults);
  return { limit, wait, ...(after !== undefined ? { after } : {}) };
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
