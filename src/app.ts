import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Response } from 'express';
import { AppModule } from './app.module';
import { setUpDocs } from './docs/openapi';
import { type AppConfig, workerShare } from './config/config';
import { AccessTokens, accessTokenMiddleware, RateLimits } from './http/access-token.middleware';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { BodyValidationPipe } from './http/body-validation.pipe';
import { edgeMiddleware } from './http/edge';
import { JsonExpressAdapter } from './http/json-express.adapter';
import { jsonBody } from './http/json-body.middleware';
import { FixedWindowLimiter } from './http/rate-limit';
import type { ServiceRequest } from './http/request-context';
import type { DestinationStream } from 'pino';
import { createLogger, NestPinoLogger } from './logging/logging';
import { Metrics } from './metrics/metrics';
import { type RecordKindDefinition, routesOf } from './kinds/record-kind-definition';
import { REGISTERED_KINDS } from './record-kinds';

/** The API's paths: routes match regardless of case, as Express matches them. */
const V1_PATH = /^\/v1(?:\/|$)/i;

/** Browsers may call /v1 from these origins, sending the token as a header, and read every header clients need. */
const corsOptions = (origins: string[]) => ({
  origin: origins[0] === '*' ? '*' : origins,
  methods: ['GET', 'POST', 'PUT', 'DELETE'],
  allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'X-Request-Id', 'Last-Event-ID'],
  exposedHeaders: ['ETag', 'X-Total-Count', 'X-Total-Count-Capped', 'X-Next-Cursor', 'X-Request-Id', 'Retry-After'],
  maxAge: 600,
});

/**
 * The whole service, initialised and not yet listening: main.ts and the tests build it the same way
 * (the tests keep its log lines in memory: `logDestination`, stdout otherwise; a test may give kinds
 * of record of its own: `kinds`, the registered ones otherwise).
 * Order matters: authentication and rate limits come before the body is read, so the bodies of
 * strangers and of tokens over their limit are never read or parsed.
 */
export async function createApp(
  config: AppConfig,
  logDestination?: DestinationStream,
  { kinds = REGISTERED_KINDS }: { kinds?: readonly RecordKindDefinition[] } = {},
): Promise<NestExpressApplication> {
  const routes = await routesOf(kinds);
  const logger = createLogger(config.logLevel, logDestination);
  const adapter = new JsonExpressAdapter({ ...config, maxConnections: workerShare(config.maxConnections, config) }, logger);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, kinds, routes), adapter, {
    bodyParser: false,
    abortOnError: false,
    logger: new NestPinoLogger(logger),
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(edgeMiddleware(logger, app.get(Metrics)));
  // Before the token check, so a browser's preflight (which carries no token) is answered.
  if (config.corsOrigins.length > 0) app.enableCors(corsOptions(config.corsOrigins));
  const authenticate = accessTokenMiddleware(new AccessTokens(config.accessTokens), rateLimits(config));
  // Not app.use('/v1', ...): a mounted layer rewrites req.url and parses it again on every request.
  // req.path is the path Express routes on, so this takes what the mount took: any case, absolute-form too.
  app.use((req: ServiceRequest, res: Response, next: NextFunction) =>
    V1_PATH.test(req.path) ? authenticate(req, res, (error?: unknown) => (error ? next(error) : jsonBody(req, res, next))) : next(),
  );
  app.useGlobalFilters(new ApiExceptionFilter());
  app.useGlobalPipes(new BodyValidationPipe());
  adapter.addAfterRoutes(() =>
    setUpDocs(
      app,
      routes.map((kind) => kind.api),
    ),
  );
  await app.init();
  return app;
}

function rateLimits(config: AppConfig): RateLimits | undefined {
  if (config.rateLimitRequests === 0) return undefined;
  const windowMs = config.rateLimitWindowSeconds * 1000;
  const share = (limit: number) => workerShare(limit, config);
  return {
    perToken: new FixedWindowLimiter(share(config.rateLimitRequests), windowMs),
    failedAuthPerAddress: config.rateLimitAuthFailures > 0 ? new FixedWindowLimiter(share(config.rateLimitAuthFailures), windowMs) : undefined,
  };
}
