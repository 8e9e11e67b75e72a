import { setTimeout as sleep } from 'node:timers/promises';
import type { EventStore, StoredEvent } from '../event-store/event-store.port';
import { formatPosition } from '../projections/positions';

/** `events tail`: every event appended from now on (of one stream if given), one JSON line each, until the signal. */
export async function eventsTail(eventStore: EventStore, options: { stream?: string; signal: AbortSignal; write: (line: string) => void }): Promise<void> {
  const from = await eventStore.headPosition();
  process.stderr.write(`Waiting for events after position ${formatPosition(from)} (Ctrl-C to stop)\n`);
  for await (const batch of eventStore.subscribeToAll(from, { signal: options.signal })) {
    for (const event of batch.events) {
      if (!options.stream || event.streamId === options.stream) options.write(JSON.stringify(toJson(event)) + '\n');
    }
  }
}

const toJson = (event: StoredEvent) => ({
  position: formatPosition(event.position),
  streamId: event.streamId,
  revision: event.revision,
  id: event.id,
  type: event.type,
  recordedAt: event.recordedAt.toISOString(),
  data: event.data,
  metadata: event.metadata,
  // An event it cannot read (see StoredEvent.unreadable): why, rather than data that looks empty.
  ...(event.unreadable !== undefined ? { unreadable: event.unreadable } : {}),
});

/** The service refused the feed's request (a token or a cursor it does not take): retrying would not mend it. */
export class FeedRefusedError extends Error {}

/** Seconds a long-poll waits for news; the request's own timeout is longer. */
const FEED_WAIT_SECONDS = 30;
const FEED_REQUEST_TIMEOUT_MS = 45_000;

export interface FeedTailOptions {
  /** The service's address, e.g. http://localhost:3000. */
  url: string;
  token: string;
  /** A cursor: the entries after it; the beginning of the account's feed without. */
  after?: string;
  signal: AbortSignal;
  write: (line: string) => void;
  /** Notices, for stderr. */
  notice: (line: string) => void;
}

/**
 * `events tail --url`: the change feed of a running service (GET /v1/events), one entry a JSON line,
 * until the signal. Long-polls, so a change is printed as soon as it is stored; a service that is
 * down or busy (a network failure, 429, 5xx) is asked again, with the same cursor, after a pause.
 */
export async function feedTail(options: FeedTailOptions): Promise<void> {
  const { signal } = options;
  let cursor = options.after;
  options.notice(`Following the change feed of ${options.url} ${cursor ? `after ${cursor}` : 'from the beginning'} (Ctrl-C to stop)`);
  let failures = 0;
  while (!signal.aborted) {
    const url = new URL('/v1/events', options.url);
    url.searchParams.set('limit', '1000');
    url.searchParams.set('wait', String(FEED_WAIT_SECONDS));
    if (cursor) url.searchParams.set('after', cursor);
    let response: Response;
    let body: { data?: { id: string }[]; error?: { message: string; details?: { field: string; message: string }[] } };
    try {
      response = await fetch(url, {
        headers: { Authorization: `Bearer ${options.token}` },
        signal: AbortSignal.any([signal, AbortSignal.timeout(FEED_REQUEST_TIMEOUT_MS)]),
      });
      body = (await response.json()) as typeof body;
    } catch (error) {
      if (signal.aborted) break;
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      await pause(`The feed could not be read (${cause})`, retryDelayMs(undefined, failures++), options);
      continue;
    }
    if (response.status === 429 || response.status >= 500) {
      await pause(`The service answered ${response.status}${body.error ? ` (${body.error.message})` : ''}`, retryDelayMs(response, failures++), options);
      continue;
    }
    if (!response.ok || !body.data) {
      const details = body.error?.details?.map((d) => (d.field === 'after' ? `--after: ${d.message}` : d.message)).join('; ');
      throw new FeedRefusedError(`The service refused the feed (${response.status}): ${details ?? body.error?.message ?? 'no reason given'}`);
    }
    failures = 0;
    for (const entry of body.data) options.write(`${JSON.stringify(entry)}\n`);
    cursor = response.headers.get('X-Next-Cursor') ?? cursor;
  }
  options.notice(cursor ? `Stopped. Resume with --after ${cursor}` : 'Stopped before any entry.');
}

/** Retry-After when the service gave one, else doubling from a quarter second up to 30 s. */
function retryDelayMs(response: Response | undefined, failures: number): number {
  const retryAfter = Number(response?.headers.get('Retry-After'));
  return retryAfter > 0 ? retryAfter * 1000 : Math.min(30_000, 250 * 2 ** failures);
}

async function pause(what: string, ms: number, { signal, notice }: FeedTailOptions): Promise<void> {
  notice(`${what}; trying again in ${(ms / 1000).toFixed(1)}s`);
  await sleep(ms, undefined, { signal }).catch(() => undefined); // cut short by Ctrl-C
}
