import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import helmet from 'helmet';
import { AppModule } from './app.module';
import { setUpDocs } from './docs/openapi';
import type { AppConfig } from './config/config';
import { AccessTokens, accessTokenMiddleware } from './http/access-token.middleware';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { BodyValidationPipe } from './http/body-validation.pipe';
import { JsonExpressAdapter } from './http/json-express.adapter';
import { jsonBody } from './http/json-body.middleware';
import { requestIdMiddleware } from './http/request-context';
import { undecodablePathMiddleware } from './http/undecodable-path.middleware';
import { createLogger, NestPinoLogger, requestLogger } from './logging/logging';
import { Metrics } from './metrics/metrics';

/**
 * helmet's defaults, except `upgrade-insecure-requests`: on a plain http port it made browsers fetch
 * the /docs page's scripts over https, leaving the page blank at any address but localhost.
 */
const HELMET = { contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } };

/** Browsers may call /v1 from these origins, sending the token as a header, and read every header clients need. */
const corsOptions = (origins: string[]) => ({
  origin: origins[0] === '*' ? '*' : origins,
  methods: ['GET', 'POST', 'PUT', 'DELETE'],
  allowedHeaders: ['Authorization', 'Content-Type', 'If-Match', 'Idempotency-Key', 'X-Request-Id'],
  exposedHeaders: ['ETag', 'X-Total-Count', 'X-Request-Id', 'Retry-After'],
  maxAge: 600,
});

/**
 * The whole service, initialised and not yet listening: main.ts and the tests build it the same way.
 * Order matters: authentication comes before the body is read, so strangers' bodies are never parsed.
 */
export async function createApp(config: AppConfig): Promise<NestExpressApplication> {
  const logger = createLogger(config.logLevel);
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), new JsonExpressAdapter(), {
    bodyParser: false,
    abortOnError: false,
    logger: new NestPinoLogger(logger),
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // The request log and metrics come before anything that can answer, so every request is seen.
  app.use(helmet(HELMET), requestIdMiddleware, requestLogger(logger), app.get(Metrics).httpMiddleware(), undecodablePathMiddleware);
  // Before the token check, so a browser's preflight (which carries no token) is answered.
  if (config.corsOrigins.length > 0) app.enableCors(corsOptions(config.corsOrigins));
  app.use('/v1', accessTokenMiddleware(new AccessTokens(config.accessTokens)), ...jsonBody);
  app.useGlobalFilters(new ApiExceptionFilter());
  app.useGlobalPipes(new BodyValidationPipe());
  setUpDocs(app);
  await app.init();
  return app;
}
