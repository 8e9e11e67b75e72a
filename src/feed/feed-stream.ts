import type { Response } from 'express';
import { once } from 'node:events';
import type { Position } from '../event-store/event-store.port';
import type { FeedWatch } from './feed-tail';
import type { FeedPage } from './feed.queries';

/** Entries read per page while streaming. */
export const STREAM_PAGE = 100;

export interface FeedStreamOptions {
  from: Position;
  read: (after: Position) => Promise<FeedPage>;
  watch: () => FeedWatch;
  /** Aborts when the consumer leaves or the service shuts down. */
  closed: AbortSignal;
  heartbeatMs: number;
  /** Told why a stream ended other than by the consumer leaving. */
  onEnd: (reason: string) => void;
}

/**
 * The feed as server-sent events (docs/api.md "Change feed"): each entry an event with its cursor
 * as `id`, its type as `event`, the entry as `data`; a comment every heartbeatMs while idle, so
 * proxies keep the connection and the consumer knows it is alive.
 *
 * Memory stays bounded per consumer: what waits unsent for it is one page at most, since a page is
 * read only once the one before has left the process's buffer (drained into the socket). A consumer
 * that stops reading is cut off when its buffer has not drained for two heartbeats; it resumes with
 * Last-Event-ID, missing nothing.
 */
export async function streamFeed(res: Response, options: FeedStreamOptions): Promise<void> {
  const { closed, heartbeatMs } = options;
  // Listening before each read, so that nothing committed in between goes unnoticed.
  let watch = options.watch();
  // The first page is read before answering: a cursor or a store that fails answers as any request does.
  let page = await options.read(options.from).catch((error: unknown) => {
    watch.stop();
    throw error;
  });
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  // Proxies that buffer responses (nginx) would hold the events back.
  res.setHeader('X-Accel-Buffering', 'no');
  // An EventSource that lost the connection comes back after a second, with Last-Event-ID.
  res.write('retry: 1000\n\n');
  // A heartbeat is due heartbeatMs after whatever was sent last, however often news comes to nothing (another account's).
  let lastSent = Date.now();
  const write = async (chunk: string) => {
    const sent = await send(res, chunk, heartbeatMs * 2, closed);
    lastSent = Date.now();
    return sent;
  };
  try {
    for (;;) {
      let chunk = '';
      for (const entry of page.entries) chunk += `id: ${entry.id}\nevent: ${entry.type}\ndata: ${JSON.stringify(entry)}\n\n`;
      if (chunk && !(await write(chunk))) return options.onEnd('the consumer stopped reading');
      // At the end of the feed: read again only on news, with a heartbeat each heartbeatMs meanwhile.
      if (page.entries.length < STREAM_PAGE) {
        const alive = await untilNews(
          watch.changed,
          () => lastSent + heartbeatMs - Date.now(),
          closed,
          () => write(': idle\n\n'),
        );
        if (!alive) return options.onEnd('the consumer stopped reading');
      }
      watch.stop();
      if (closed.aborted) return;
      watch = options.watch();
      page = await options.read(page.next);
    }
  } catch (error) {
    // The store failed: the consumer resumes from its last entry once it reconnects.
    options.onEnd(`the feed could not be read: ${(error as Error).message}`);
  } finally {
    watch.stop();
    res.end();
  }
}

/** Writes, then waits for the buffer to drain when it is full; false when it did not drain in time: the consumer is cut off. */
async function send(res: Response, chunk: string, stallMs: number, closed: AbortSignal): Promise<boolean> {
  if (res.write(chunk)) return true;
  const stalled = AbortSignal.timeout(stallMs);
  // Drained, or the stream ends anyway (closed): go on; stalled: cut off.
  const drained = await once(res, 'drain', { signal: AbortSignal.any([closed, stalled]) }).then(
    () => true,
    () => !stalled.aborted,
  );
  return drained || cutOff(res);
}

function cutOff(res: Response): false {
  res.destroy();
  return false;
}

/**
 * Waits for news (or the stream's end), calling `heartbeat` whenever one is due (`untilHeartbeat`,
 * in ms) meanwhile; false when a heartbeat could not be sent. Listens to `changed` once, however
 * long the wait.
 */
async function untilNews(changed: Promise<void>, untilHeartbeat: () => number, closed: AbortSignal, heartbeat: () => Promise<boolean>): Promise<boolean> {
  // One due already: sent before news that came meanwhile (during the page read) ends the wait.
  if (untilHeartbeat() <= 0 && !(await heartbeat())) return false;
  let news = false;
  let stop: (() => void) | undefined;
  void changed.then(() => {
    news = true;
    stop?.();
  });
  while (!news && !closed.aborted) {
    const idle = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(true), Math.max(0, untilHeartbeat()));
      const onClosed = () => done(false);
      closed.addEventListener('abort', onClosed, { once: true });
      stop = () => done(false);
      function done(timedOut: boolean) {
        clearTimeout(timer);
        closed.removeEventListener('abort', onClosed);
        stop = undefined;
        resolve(timedOut);
      }
    });
    if (idle && !(await heartbeat())) return false;
  }
  return true;
}
