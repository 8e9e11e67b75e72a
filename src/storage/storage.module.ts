import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { SqliteEventStore } from '../event-store/sqlite-event-store';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { SqliteReadStore } from '../read-store/sqlite-read-store';
import { InstrumentedEventStore, InstrumentedReadStore } from '../metrics/instrumented-stores';
import { Metrics } from '../metrics/metrics';
import { openSqliteDatabase } from './sqlite-database';

/** Closes the stores after everything that uses them has stopped (projectors stop on module destroy). */
@Injectable()
class StorageShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.eventStore.close();
    await this.readStore.close();
  }
}

/**
 * The configuration and the two ports' adapters, for the whole app. The embedded default keeps
 * events and read models in one SQLite file, through one connection each. Each adapter is wrapped
 * to time its calls for /metrics.
 */
@Global()
@Module({})
export class StorageModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: StorageModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        {
          provide: EVENT_STORE,
          useFactory: (metrics: Metrics) =>
            new InstrumentedEventStore(new SqliteEventStore(openSqliteDatabase(config.sqliteFile, { durable: true })), metrics),
          inject: [Metrics],
        },
        {
          provide: READ_STORE,
          useFactory: (metrics: Metrics) =>
            new InstrumentedReadStore(new SqliteReadStore(openSqliteDatabase(config.sqliteFile, { durable: false })), metrics),
          inject: [Metrics],
        },
        StorageShutdown,
      ],
      exports: [APP_CONFIG, EVENT_STORE, READ_STORE],
    };
  }
}
