/**
 * The read models do not show what a read or a write needs yet: they are catching up with the
 * events stored before the start, or have not folded a write that is saved. Unavailable for now
 * (503 with Retry-After), `message` saying which, for the client to read.
 */
export class ReadModelsBehindError extends Error {
  constructor(
    message: string,
    /** Seconds to wait before trying again. */
    readonly retryAfter: number,
  ) {
    super(message);
    this.name = 'ReadModelsBehindError';
  }
}
