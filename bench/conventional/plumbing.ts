// The conventional service's cross-cutting parts, as a NestJS developer would add them: a bearer
// token guard, a throttler guard on an O(1) store (a fixed window per token in a Map), a pino line
// per request and a prom-client histogram per request, and /metrics.
import { CanActivate, Controller, createParamDecorator, ExecutionContext, Get, HttpException, Injectable, Res, UnauthorizedException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import pino from 'pino';
import { Histogram, Registry } from 'prom-client';

type AuthedRequest = Request & { accountId?: string };

/** The account the request's token belongs to (set by AuthGuard). */
export const AccountId = createParamDecorator((_data: unknown, ctx: ExecutionContext) => ctx.switchToHttp().getRequest<AuthedRequest>().accountId!);

const bearer = (req: Request) => req.headers.authorization?.replace(/^Bearer /, '') ?? '';

@Injectable()
export class AuthGuard implements CanActivate {
  /** ACCESS_TOKENS=token:account,... */
  private readonly accounts = new Map((process.env.ACCESS_TOKENS ?? '').split(',').map((pair) => pair.split(':') as [string, string]));

  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<AuthedRequest>();
    const account = this.accounts.get(bearer(req));
    if (!account) throw new UnauthorizedException('A valid bearer token is required');
    req.accountId = account;
    return true;
  }
}

@Injectable()
export class ThrottlerGuard implements CanActivate {
  private readonly limit = Number(process.env.RATE_LIMIT_REQUESTS ?? 1_000_000);
  private readonly windowMs = 60_000;
  private readonly windows = new Map<string, { start: number; count: number }>();

  canActivate(ctx: ExecutionContext): boolean {
    const key = bearer(ctx.switchToHttp().getRequest<Request>());
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) this.windows.set(key, (window = { start: now, count: 0 }));
    if (++window.count > this.limit) throw new HttpException('Too many requests', 429);
    return true;
  }
}

export const registry = new Registry();
const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'HTTP requests by method, route and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

const logger = pino(pino.destination({ dest: 1, sync: false }));

/** A log line and a histogram observation per request, once its answer is sent. */
export function requestLogging(req: Request, res: Response, next: NextFunction): void {
  const started = performance.now();
  res.on('finish', () => {
    const seconds = (performance.now() - started) / 1000;
    const route = (req.route as { path?: string } | undefined)?.path ?? 'none';
    httpDuration.observe({ method: req.method, route, status: String(res.statusCode) }, seconds);
    logger.info(
      {
        req: { method: req.method, url: req.originalUrl, remoteAddress: req.socket.remoteAddress },
        res: { statusCode: res.statusCode },
        responseTime: seconds * 1000,
      },
      'request completed',
    );
  });
  next();
}

@Controller('metrics')
export class MetricsController {
  @Get()
  async metrics(@Res() res: Response): Promise<void> {
    res.setHeader('Content-Type', registry.contentType);
    res.end(await registry.metrics());
  }
}
