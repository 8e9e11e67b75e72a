import { comparePositions, Position, START } from './event-store.port';

/**
 * Searches of the end of EventStoreDB's log, read backwards a page at a time: where a subscription
 * can get to (the head), and whether a silent subscription has an event of its own past it. Pure
 * logic on pages; the adapter reads them (the client's readAll takes no filter, so pages hold every
 * stream's events, the server's own `$…` ones included).
 */

/** One event of a page, as the searches need it. */
export interface LogEntry {
  streamId: string;
  revision: bigint;
  position: Position;
}

/** Reads up to `maxCount` events backwards from `from` ('end': the log's end). A page read from a position may start with the event at it. */
export type ReadBackwards = (from: Position | 'end', maxCount: number) => Promise<LogEntry[]>;

/** Events read at once when looking for the head past the server's own events at the end of the log. */
export const HEAD_PAGE = 32;
/**
 * The head's search reads each page after the first four times as long as the one before, up to
 * this many events: a log may end with thousands of the server's own events (a node idle for long
 * with `WriteStatsToDb` on writes one to its `$stats-…` stream every 30 s), which then take a few
 * reads, not one a page.
 */
const HEAD_PAGE_MOST = 4_096;
/**
 * Pages of the log's end a silent subscription's watchdog reads at most, looking for an event of
 * its own past it. A healthy one is never that far behind: the server sends it a checkpoint at the
 * end of a catch-up (no earlier than the start of its last page) and then every 32 events it
 * considers live (Enumerator.AllSubscriptionFiltered.cs v24.10.6 lines 307-311 and 326-328;
 * SubscriptionsService.cs lines 372-382). One further behind is renewed: its catch-up brings it
 * within a page of the end.
 */
export const SCAN_PAGES = 8;

const isSystemStream = (streamId: string) => streamId.startsWith('$');

/** The page's events before `from`: a page read from a position may start with the event at it, the last page's. */
const before = (page: LogEntry[], from: Position | 'end') => (from === 'end' ? page : page.filter((e) => comparePositions(e.position, from) < 0));

/** The position of the last event of a stream not the server's own: where a subscription without prefix ends; START for none. */
export async function headOf(read: ReadBackwards): Promise<Position> {
  let from: Position | 'end' = 'end';
  for (let maxCount = HEAD_PAGE; ; maxCount = Math.min(4 * maxCount, HEAD_PAGE_MOST)) {
    const page = before(await read(from, maxCount), from);
    const head = page.find((e) => !isSystemStream(e.streamId));
    if (head) return head.position;
    if (page.length === 0) return START;
    from = page[page.length - 1].position;
  }
}

/**
 * Why a subscription that is at `from` and lets through the streams `matches` accepts is behind:
 * an event it would be sent lies past it. Null when none does. Events of other streams past it are
 * no reason, as the server owes it no checkpoint for fewer than 32 of them.
 */
export async function pastSubscription(read: ReadBackwards, from: Position, matches: (streamId: string) => boolean): Promise<string | null> {
  let page: Position | 'end' = 'end';
  for (let pages = 0; pages < SCAN_PAGES; pages++) {
    const read_ = before(await read(page, HEAD_PAGE), page);
    const past = read_.filter((e) => comparePositions(e.position, from) > 0);
    const found = past.find((e) => matches(e.streamId));
    if (found) return `${found.streamId}@${found.revision} lies past it at ${found.position.commit}/${found.position.prepare}`;
    if (past.length < read_.length || past.length === 0) return null;
    page = past[past.length - 1].position;
  }
  return `the ${SCAN_PAGES * HEAD_PAGE} last events of the log are all past it`;
}
