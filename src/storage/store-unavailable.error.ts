/**
 * A store (event store or read store) cannot be reached right now: the server is down, restarting
 * or too slow. Adapters throw it instead of their driver's errors, so the HTTP layer can answer 503
 * UNAVAILABLE with Retry-After (never a stack trace), and start-up can say which store is missing.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: 'EventStoreDB' | 'MongoDB' | 'SQLite' | 'the erasure log',
    reason: string,
  ) {
    super(`${store} is unreachable: ${reason}`);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * A store that cannot write for want of disk space: unavailable like one down (503 with
 * Retry-After, tried again by whatever retries), and it comes back by itself once space returns.
 */
export class StoreFullError extends StoreUnavailableError {
  constructor(store: StoreUnavailableError['store'], code: string) {
    super(store, `no space left on its disk (${code})`);
    this.message = `${store} cannot write: no space left on its disk (${code})`;
    this.name = 'StoreFullError';
  }
}

/** What a write finds when the disk has no room: SQLite's code, or the file system's (open, fdatasync of the WAL). */
const NO_SPACE = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

/**
 * A SQLite store's failure as its port surfaces it: a full disk is StoreFullError; a file another
 * connection kept locked past the busy timeout (a checkpoint thread's sync of it stalled by the
 * disk, another process's long transaction) is the store unavailable; anything else as it is.
 */
export function sqliteFailure(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error;
  if (NO_SPACE.has(code)) return new StoreFullError('SQLite', code);
  if (code.startsWith('SQLITE_BUSY')) return new StoreUnavailableError('SQLite', `its file stayed locked past the busy timeout (${code})`);
  return error;
}

/**
 * A write whose append was sent and whose answer never came (a deadline passed, the connection
 * dropped): it may have been stored or not. Unavailable like any store failure, but its answer must
 * say so, so that a client retries with the same Idempotency-Key rather than writing twice.
 */
export class WriteOutcomeUnknownError extends StoreUnavailableError {
  constructor(cause: StoreUnavailableError) {
    super(cause.store, cause.message);
    this.message = `${cause.message} (a write's outcome is unknown)`;
    this.name = 'WriteOutcomeUnknownError';
  }
}
