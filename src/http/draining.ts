import { setMaxListeners } from 'node:events';

/**
 * Aborted when the service starts shutting down: requests that would otherwise stay open (a
 * long-poll, an event stream) answer or end at once, so the drain does not wait out its grace for them.
 */
export const draining = new AbortController();
// Each open long-poll or stream listens while it is open: thousands at once are expected, not a leak.
setMaxListeners(0, draining.signal);

/** Aborts when the response's connection closes (the client left, or it was answered) or the service begins to shut down. */
export function whileOpen(res: { once(event: 'close', listener: () => void): unknown }): AbortSignal {
  const open = new AbortController();
  const abort = () => open.abort();
  draining.signal.addEventListener('abort', abort, { once: true });
  res.once('close', () => {
    draining.signal.removeEventListener('abort', abort);
    abort();
  });
  if (draining.signal.aborted) abort();
  return open.signal;
}
