import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { SqliteEventStore } from '../event-store/sqlite-event-store';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { SqliteReadStore } from '../read-store/sqlite-read-store';
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

/** The event store the configuration selects: the service and the CLI open it the same way. */
export const openEventStore = (config: Pick<AppConfig, 'sqliteFile'>): EventStore =>
  new SqliteEventStore(openSqliteDatabase(config.sqliteFile, { durable: true }));

/** The read store the configuration selects. */
export const openReadStore = (config: Pick<AppConfig, 'sqliteFile'>): ReadStore =>
  new SqliteReadStore(openSqliteDatabase(config.sqliteFile, { durable: false }));

/**
 * The configuration and the two ports' adapters, for the whole app. The embedded default keeps
 * events and read models in one SQLite file, through one connection each.
 */
@Global()
@Module({})
export class StorageModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: StorageModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: EVENT_STORE, useFactory: () => openEventStore(config) },
        { provide: READ_STORE, useFactory: () => openReadStore(config) },
        StorageShutdown,
      ],
      exports: [APP_CONFIG, EVENT_STORE, READ_STORE],
    };
  }
}
