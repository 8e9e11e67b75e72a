import type { NextFunction, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from './api-error';
import { FixedWindowLimiter } from './rate-limit';
import type { ServiceRequest } from './request-context';

/** A token's SHA-256: what is compared, and what the rate limiter keys on, never the token itself. */
export const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** A configured token: its digest, that digest as the limits' key, and its account. */
interface TokenEntry {
  digest: Buffer;
  key: string;
  accountId: string;
}

/** Maps access tokens to accounts without a timing side channel. */
export class AccessTokens {
  private readonly entries: TokenEntry[];
  /**
   * Tokens sent that matched, by their text: a client sends the same token on every request, and
   * hashing it each time cost more than the rest of authentication. Only matches are kept, so it
   * holds at most the configured tokens; a wrong token is hashed and compared every time.
   */
  private readonly matched = new Map<string, TokenEntry>();

  constructor(tokens: Map<string, string>) {
    this.entries = [...tokens].map(([token, accountId]) => {
      const hash = digest(token);
      return { digest: hash, key: hash.toString('base64'), accountId };
    });
  }

  /** The entry of a token sent, or null. */
  entryFor(token: string): TokenEntry | null {
    const known = this.matched.get(token);
    if (known) return known;
    const found = this.compare(digest(token));
    if (found) this.matched.set(token, found);
    return found;
  }

  /** Compares against every token in constant time, so timing tells nothing of which is close. */
  private compare(sent: Buffer): TokenEntry | null {
    let found: TokenEntry | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, sent)) found = entry;
    }
    return found;
  }
}

/** `access_token` from the query, or `Authorization: Bearer <token>`. */
export function tokenOf(req: ServiceRequest): unknown {
  const fromQuery = req.query.access_token;
  if (fromQuery !== undefined) return fromQuery;
  const auth = req.headers.authorization;
  const bearer = auth?.match(/^Bearer\s+(\S+)\s*$/i);
  return bearer ? bearer[1] : auth === undefined ? undefined : '';
}

export interface RateLimits {
  /** Requests per token and window: every request counts, whatever its answer. */
  perToken: FixedWindowLimiter;
  /** Failed authentications per client address and window: past it, the address is refused before its token is looked at. */
  failedAuthPerAddress?: FixedWindowLimiter;
}

const rateLimited = (retryAfter: number, message: string) =>
  new ApiError('RATE_LIMITED', `${message} Retry after the number of seconds in Retry-After.`, undefined, retryAfter);

/**
 * Authenticates a /v1 request and applies the rate limits, all before its body is read: a stranger,
 * or a token over its limit, never makes the service read or parse a body.
 */
export function accessTokenMiddleware(tokens: AccessTokens, limits?: RateLimits) {
  return (req: ServiceRequest, _res: Response, next: NextFunction): void => {
    const address = req.socket.remoteAddress ?? '';
    const failures = limits?.failedAuthPerAddress;
    const wait = failures?.blocked(address);
    if (failures && wait) {
      return next(rateLimited(wait, `Too many failed authentications from this address: at most ${failures.limit} per ${failures.windowMs / 1000} s.`));
    }
    const token = tokenOf(req);
    const entry = typeof token === 'string' && token !== '' ? tokens.entryFor(token) : null;
    if (!entry) {
      failures?.hit(address);
      const problem =
        token === '' && req.query.access_token === undefined
          ? // An Authorization header of another form, e.g. the bare token: say which form is taken.
            'the Authorization header must be "Bearer <access token>" (or send ?access_token=<access token>)'
          : token === undefined || token === ''
            ? 'access_token is required'
            : 'access_token is invalid';
      return next(new ApiError('UNAUTHORIZED', problem));
    }
    if (limits) {
      const wait = limits.perToken.hit(entry.key);
      if (wait) {
        return next(rateLimited(wait, `Too many requests with this access token: at most ${limits.perToken.limit} per ${limits.perToken.windowMs / 1000} s.`));
      }
    }
    req.accountId = entry.accountId;
    req.tokenKey = entry.key;
    next();
  };
}
