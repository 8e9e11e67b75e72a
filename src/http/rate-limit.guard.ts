import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerLimitDetail } from '@nestjs/throttler';
import { ApiError } from '../errors';
import { digest, tokenOf } from './access-token.middleware';
import type { ServiceRequest } from './request-context';

/**
 * Limits the requests of each access token (two tokens of one account count apart). The limiter
 * keys on the token's digest, so the token itself is never stored. Only authenticated /v1 routes are
 * limited: /metrics and /docs are not.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return !context.switchToHttp().getRequest<ServiceRequest>().accountId;
  }

  protected override async getTracker(req: ServiceRequest): Promise<string> {
    return digest(String(tokenOf(req))).toString('hex');
  }

  /** One allowance per token across every route (the default keeps one per route). */
  protected override generateKey(_context: ExecutionContext, tracker: string, throttler: string): string {
    return `${throttler}:${tracker}`;
  }

  protected override async throwThrottlingException(_context: ExecutionContext, limit: ThrottlerLimitDetail): Promise<void> {
    throw new ApiError(
      'RATE_LIMITED',
      `Too many requests with this access token: at most ${limit.limit} per ${limit.ttl / 1000} s. Retry after the number of seconds in Retry-After.`,
      undefined,
      Math.max(1, limit.timeToBlockExpire),
    );
  }
}
