import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { EventStore, StoredEvent } from '../../src/event-store/event-store.port';
import { START } from '../../src/event-store/event-store.port';
import { CUSTOMER_SHORT_FIELDS } from '../../src/customers/customer.view';
import { PROFILE_FIELDS } from '../../src/profiles/profile.view';

/**
 * A consumer's side of the change feed (GET /v1/events, CONTRACT.md "Change feed"), for the feed's
 * tests: pages and long-polls, server-sent events, a copy of the records kept from the entries, and
 * the service's lists and the event store's order to compare it with.
 */

export interface FeedEntry {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  dataschema: string;
  data: { revision: number; changes: Record<string, { from: string; to: string } | null> };
}

export interface FeedPage {
  status: number;
  entries: FeedEntry[];
  /** X-Next-Cursor. */
  cursor: string;
  body: unknown;
}

/** One GET /v1/events. `signal` aborts it (a consumer killed mid-request). */
export async function readPage(
  baseUrl: string,
  token: string,
  options: { after?: string; limit?: number; wait?: number; signal?: AbortSignal } = {},
): Promise<FeedPage> {
  const query = new URLSearchParams();
  if (options.after !== undefined) query.set('after', options.after);
  if (options.limit !== undefined) query.set('limit', String(options.limit));
  if (options.wait !== undefined) query.set('wait', String(options.wait));
  const res = await fetch(`${baseUrl}/v1/events?${query.toString()}`, { headers: { Authorization: `Bearer ${token}` }, signal: options.signal });
  const body = (await res.json()) as { data?: FeedEntry[] };
  return { status: res.status, entries: res.status === 200 ? body.data! : [], cursor: res.headers.get('x-next-cursor') ?? '', body };
}

/** Every entry after `after` (from the start without), page by page, and the cursor after the last. */
export async function readFeed(baseUrl: string, token: string, after?: string, limit = 1000): Promise<{ entries: FeedEntry[]; cursor: string }> {
  const entries: FeedEntry[] = [];
  let cursor = after;
  for (;;) {
    const page = await readPage(baseUrl, token, { after: cursor, limit });
    if (page.status !== 200) throw new Error(`GET /v1/events answered ${page.status}: ${JSON.stringify(page.body)}`);
    entries.push(...page.entries);
    cursor = page.cursor;
    if (page.entries.length < limit) return { entries, cursor };
  }
}

/** One server-sent event as received: its id, event and data lines. */
export interface SseEvent {
  id: string;
  event: string;
  data: string;
}

/** The complete events in `text` (blocks ended by a blank line with a `data:` line), and what is left after them. */
export function parseSse(text: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  let start = 0;
  for (;;) {
    const end = text.indexOf('\n\n', start);
    if (end < 0) break;
    const block = text.slice(start, end);
    start = end + 2;
    const fields: Record<string, string> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
    }
    if (fields.data !== undefined) events.push({ id: fields.id, event: fields.event, data: fields.data });
  }
  return { events, rest: text.slice(start) };
}

export interface FeedStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** The entries received so far, parsed, in order. */
  entries: FeedEntry[];
  /** Bytes received so far. */
  bytes(): number;
  /** Everything received, as text. */
  text(): string;
  /** Resolves once the server ended the stream (or the connection failed); never for a stream that goes on. */
  ended: Promise<void>;
  isEnded(): boolean;
  /** Stops reading from the socket (the server's writes back up), and goes on reading. */
  pause(): void;
  resume(): void;
  /** Polls until `check` holds, for at most `ms`; false when it never did. */
  until(check: () => boolean, ms?: number): Promise<boolean>;
  /** Closes the connection from this side. */
  close(): void;
}

/**
 * GET /v1/events with Accept: text/event-stream over node:http (so that pausing the response stops
 * reading from the socket), resuming after `lastEventId` or `after`. `onEntry` is told of each entry
 * as it is parsed.
 */
export function openFeedStream(
  baseUrl: string,
  token: string,
  options: { lastEventId?: string; after?: string; onEntry?: (entry: FeedEntry) => void } = {},
): Promise<FeedStream> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const path = `/v1/events${options.after ? `?after=${options.after}` : ''}`;
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, headers, agent: false });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      req.off('error', reject);
      const entries: FeedEntry[] = [];
      let text = '';
      let pending = '';
      let bytes = 0;
      let ended = false;
      let markEnded!: () => void;
      const endedPromise = new Promise<void>((done) => (markEnded = done));
      const end = () => {
        ended = true;
        markEnded();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += Buffer.byteLength(chunk);
        if (text.length < 1 << 16) text += chunk;
        const parsed = parseSse(pending + chunk);
        pending = parsed.rest;
        for (const event of parsed.events) {
          const entry = JSON.parse(event.data) as FeedEntry;
          entries.push(entry);
          options.onEntry?.(entry);
        }
      });
      res.on('end', end);
      res.on('close', end);
      res.on('error', end);
      req.on('error', end);
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        entries,
        bytes: () => bytes,
        text: () => text,
        ended: endedPromise,
        isEnded: () => ended,
        pause: () => res.pause(),
        resume: () => res.resume(),
        until: async (check, ms = 10_000) => {
          const deadline = Date.now() + ms;
          while (!check()) {
            if (Date.now() > deadline) return false;
            await new Promise((r) => setTimeout(r, 20));
          }
          return true;
        },
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}

/** A record as a consumer keeps it from the feed: its fields with a value. */
export type CopiedRecord = Record<string, string>;

/**
 * What a consumer of the feed keeps: each live record's fields, by source and id, built from the
 * entries alone. A delete or an erasure removes the record (lists show neither); an erasure also
 * marks its id, which must never come back.
 */
export class FeedCopy {
  readonly records = new Map<string, CopiedRecord>();
  readonly erased = new Set<string>();

  apply(entry: FeedEntry): void {
    const key = `${entry.source} ${entry.subject}`;
    const verb = entry.type.split('.')[1];
    if (verb === 'deleted' || verb === 'erased') {
      this.records.delete(key);
      if (verb === 'erased') this.erased.add(key);
      return;
    }
    const record = verb === 'created' ? {} : this.records.get(key);
    if (!record) throw new Error(`${entry.type} of ${key} before its creation in the copy`);
    for (const [field, change] of Object.entries(entry.data.changes)) {
      // null: the record was erased since; its erasure comes later in the feed and removes it.
      const to = change === null ? '' : change.to;
      if (to === '') delete record[field];
      else record[field] = to;
    }
    this.records.set(key, record);
  }

  /** The copy of one kind's records (source `/v1/<resource>`), by id. */
  of(resource: string): Map<string, CopiedRecord> {
    const prefix = `/v1/${resource} `;
    return new Map([...this.records].filter(([key]) => key.startsWith(prefix)).map(([key, record]) => [key.slice(prefix.length), record]));
  }
}

/**
 * Every record of GET /v1/<resource> (all pages, by X-Next-Cursor), as the copy keeps it: the
 * fields the view shows with a value (view-only fields left out: id, created, default, logo, signature).
 */
export async function listAll(baseUrl: string, token: string, resource: 'customers' | 'profiles'): Promise<Map<string, CopiedRecord>> {
  const records = new Map<string, CopiedRecord>();
  let after: string | undefined;
  for (;;) {
    const res = await fetch(`${baseUrl}/v1/${resource}?limit=100${after ? `&after=${after}` : ''}`, { headers: { Authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET /v1/${resource} answered ${res.status}`);
    const body = (await res.json()) as { data: Record<string, Record<string, unknown>>[] };
    for (const item of body.data) {
      const view = Object.values(item)[0];
      const record: CopiedRecord = {};
      for (const [field, value] of Object.entries(view)) {
        if (['id', 'created', 'default', 'logo', 'signature'].includes(field) || value === '' || value === null) continue;
        record[field] = typeof value === 'number' ? String(value) : (value as string);
      }
      records.set(view.id as string, record);
    }
    after = res.headers.get('x-next-cursor') ?? undefined;
    if (!after) return records;
  }
}

/** The copy of one kind's records with only the fields its list shows (customers: the short view). */
export function asListed(resource: 'customers' | 'profiles', copy: Map<string, CopiedRecord>): Map<string, CopiedRecord> {
  const shown = new Set(resource === 'customers' ? CUSTOMER_SHORT_FIELDS : PROFILE_FIELDS);
  return new Map([...copy].map(([id, r]) => [id, Object.fromEntries(Object.entries(r).filter(([field]) => shown.has(field)))]));
}

/** The account's events of record streams (profile-, customer-), in the order the store keeps them. */
export async function storedOrder(events: EventStore, accountId: string): Promise<StoredEvent[]> {
  const head = await events.headPosition();
  const found: StoredEvent[] = [];
  if (head.commit < 0n) return found;
  const abort = new AbortController();
  try {
    for await (const batch of events.subscribeToAll(START, { signal: abort.signal })) {
      for (const event of batch.events) {
        if (event.metadata.accountId === accountId && /^(profile|customer)-/.test(event.streamId)) found.push(event);
      }
      if (batch.position.commit >= head.commit) break;
    }
  } finally {
    abort.abort();
  }
  return found;
}
