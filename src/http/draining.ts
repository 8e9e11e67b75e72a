import { setMaxListeners } from 'node:events';

/**
 * Aborted when the service starts shutting down: requests that would otherwise stay open (a
 * long-poll, an event stream) answer or end at once, so the drain does not wait out its grace for them.
 */
export const draining = new AbortController();
// Each open long-poll or stream listens while it is open: thousands at once are expected, not a leak.
setMaxListeners(0, draining.signal);

const CLOSED = 'closed';

/**
 * Aborts when the response's connection closes (the client left, or it was answered), the service
 * begins to shut down, or `closing` aborts (the app closes).
 */
export function whileOpen(res: { once(event: 'close', listener: () => void): unknown }, closing: AbortSignal): AbortSignal {
  const open = new AbortController();
  // A reason of its own: without one, abort() makes a DOMException, stack and all, on every request's close.
  const abort = () => open.abort(CLOSED);
  const ends = [draining.signal, closing];
  for (const signal of ends) signal.addEventListener('abort', abort, { once: true });
  res.once('close', () => {
    for (const signal of ends) signal.removeEventListener('abort', abort);
    abort();
  });
  if (ends.some((signal) => signal.aborted)) abort();
  return open.signal;
}
