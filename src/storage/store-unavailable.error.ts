/**
 * A store (event store or read store) cannot be reached right now: the server is down, restarting
 * or too slow. Adapters throw it instead of their driver's errors, so the HTTP layer can answer 503
 * UNAVAILABLE with Retry-After (never a stack trace), and start-up can say which store is missing.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: 'EventStoreDB' | 'MongoDB' | 'SQLite',
    reason: string,
  ) {
    super(`${store} is unreachable: ${reason}`);
    this.name = 'StoreUnavailableError';
  }
}
