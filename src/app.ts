import { LogLevel as NestLogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import type { AppConfig, LogLevel } from './config/config';
import { AccessTokens, accessTokenMiddleware } from './http/access-token.middleware';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { BodyValidationPipe } from './http/body-validation.pipe';
import { JsonExpressAdapter } from './http/json-express.adapter';
import { jsonBody } from './http/json-body.middleware';
import { requestIdMiddleware } from './http/request-context';
import { undecodablePathMiddleware } from './http/undecodable-path.middleware';

const NEST_LEVELS: Record<LogLevel, NestLogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/**
 * The whole service, initialised and not yet listening: main.ts and the tests build it the same way.
 * Order matters: authentication comes before the body is read, so strangers' bodies are never parsed.
 */
export async function createApp(config: AppConfig): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), new JsonExpressAdapter(), {
    bodyParser: false,
    abortOnError: false,
    logger: NEST_LEVELS[config.logLevel],
  });
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestIdMiddleware, undecodablePathMiddleware);
  app.use('/v1', accessTokenMiddleware(new AccessTokens(config.accessTokens)), ...jsonBody);
  app.useGlobalFilters(new ApiExceptionFilter());
  app.useGlobalPipes(new BodyValidationPipe());
  await app.init();
  return app;
}
