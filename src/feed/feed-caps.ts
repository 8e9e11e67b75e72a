import type { Response } from 'express';
import { ApiError } from '../http/api-error';

/** Seconds a consumer refused for the requests it holds open is told to wait: a slot frees only as one of them closes. */
export const FEED_CAP_RETRY_AFTER = 5;

/**
 * Caps the change feed's requests that stay open, event streams and long-polls (`wait`), per access
 * token and per account, far below MAX_CONNECTIONS: each holds a connection for as long as it
 * lasts, and the rate limit counts it once, so without a cap one client could take every
 * connection and leave the other accounts none. A slot is held until the response closes, whichever
 * way it does: answered, the consumer gone, the stream ended (shutdown, a store failure) or cut off.
 */
export class FeedCaps {
  private readonly byToken = new Map<string, number>();
  private readonly byAccount = new Map<string, number>();

  constructor(
    readonly perToken: number,
    readonly perAccount: number,
    /** Told the change of the count open, +1 or -1 (a gauge of /metrics). */
    private readonly counted: (change: number) => void = () => undefined,
  ) {}

  /** Holds a slot of the token's and of its account's until `res` closes; 429 RATE_LIMITED naming the cap when either has none free. */
  hold(tokenKey: string, accountId: string, res: Response): void {
    if ((this.byToken.get(tokenKey) ?? 0) >= this.perToken) throw full(`This access token has ${this.perToken}`, '');
    if ((this.byAccount.get(accountId) ?? 0) >= this.perAccount) throw full(`This account has ${this.perAccount}`, ' over its access tokens');
    this.add(tokenKey, accountId, 1);
    const release = () => this.add(tokenKey, accountId, -1);
    // The consumer may have left while the request was on its way here: its close is past.
    if (res.closed) release();
    else res.once('close', release);
  }

  private add(tokenKey: string, accountId: string, change: number): void {
    count(this.byToken, tokenKey, change);
    count(this.byAccount, accountId, change);
    this.counted(change);
  }
}

const full = (holder: string, where: string) =>
  new ApiError(
    'RATE_LIMITED',
    `${holder} change-feed event streams or long-polls open${where}, the most allowed at once: close one before opening another.`,
    undefined,
    FEED_CAP_RETRY_AFTER,
  );

/** Adds `change` to the key's count; a count back to 0 leaves the map, so it holds only the keys with requests open. */
function count(counts: Map<string, number>, key: string, change: number): void {
  const next = (counts.get(key) ?? 0) + change;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
