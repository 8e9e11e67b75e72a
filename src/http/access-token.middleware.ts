import type { NextFunction, Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../errors';
import type { ServiceRequest } from './request-context';

/** A token's SHA-256: what is compared, and what the rate limiter keys on, never the token itself. */
export const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** Maps access tokens to accounts without a timing side channel. */
export class AccessTokens {
  private readonly entries: { digest: Buffer; accountId: string }[];

  constructor(tokens: Map<string, string>) {
    this.entries = [...tokens].map(([token, accountId]) => ({ digest: digest(token), accountId }));
  }

  /** Compares against every token in constant time, so timing tells nothing of which is close. */
  accountFor(token: string): string | null {
    const sent = digest(token);
    let account: string | null = null;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, sent)) account = entry.accountId;
    }
    return account;
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

export function accessTokenMiddleware(tokens: AccessTokens) {
  return (req: ServiceRequest, _res: Response, next: NextFunction): void => {
    const token = tokenOf(req);
    if (token === '' && req.query.access_token === undefined) {
      // An Authorization header of another form, e.g. the bare token: say which form is taken.
      return next(new ApiError('UNAUTHORIZED', 'the Authorization header must be "Bearer <access token>" (or send ?access_token=<access token>)'));
    }
    if (token === undefined || token === '') {
      return next(new ApiError('UNAUTHORIZED', 'access_token is required'));
    }
    const accountId = typeof token === 'string' ? tokens.accountFor(token) : null;
    if (!accountId) return next(new ApiError('UNAUTHORIZED', 'access_token is invalid'));
    req.accountId = accountId;
    next();
  };
}
