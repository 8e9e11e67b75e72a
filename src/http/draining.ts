/**
 * Aborted when the service starts shutting down: requests that would otherwise stay open (a
 * long-poll, an event stream) answer or end at once, so the drain does not wait out its grace for them.
 */
export const draining = new AbortController();
