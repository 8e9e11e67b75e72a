// The conventional service, the bench's second floor: customers on NestJS 12 + Express and
// better-sqlite3, as it is usually built without event sourcing (no event store, no read model, no
// erasure, no change feed), with the service's request features: helmet, a pino line per request,
// a throttler, prom-client, class-validator DTOs, ETags, one commit per write, WAL at
// synchronous=FULL. `node dist-bench/bench/conventional/main.js` with DATA_DIR and ACCESS_TOKENS
// (token:account,...); prints its address. It shares no code with src/.
import 'reflect-metadata';
import { Module, ValidationPipe } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import Sqlite from 'better-sqlite3';
import helmet from 'helmet';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSchema, CustomersController, CustomersRepository } from './customers';
import { AuthGuard, MetricsController, requestLogging, ThrottlerGuard } from './plumbing';

function openDatabase() {
  const db = new Sqlite(join(process.env.DATA_DIR ?? '.', 'conventional.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  createSchema(db);
  return db;
}

@Module({
  controllers: [CustomersController, MetricsController],
  providers: [
    { provide: CustomersRepository, useFactory: () => new CustomersRepository(openDatabase()) },
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: ThrottlerGuard },
  ],
})
class ConventionalModule {}

async function bootstrap(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(ConventionalModule, { logger: ['error', 'warn'] });
  app.set('etag', false); // ETags are the rows' versions, set by the controller
  app.use(helmet());
  app.use(requestLogging);
  app.useGlobalPipes(new ValidationPipe({ transform: true, whitelist: true, forbidNonWhitelisted: true }));
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  console.error(`Listening on http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`);
}

// Exits on SIGTERM, so that a profile taken with --cpu-prof is written.
process.once('SIGTERM', () => process.exit(0));
void bootstrap();
