import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { SqliteEventStore } from '../event-store/sqlite-event-store';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { SqliteReadStore } from '../read-store/sqlite-read-store';
import { openSqliteDatabase, SqliteDatabase } from './sqlite-database';

const SQLITE_DATABASE = Symbol('SqliteDatabase');

/** Closes the stores after everything that uses them has stopped (projectors stop on module destroy). */
@Injectable()
class StorageShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    @Inject(SQLITE_DATABASE) private readonly db: SqliteDatabase,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.eventStore.close();
    await this.readStore.close();
    this.db.close();
  }
}

/**
 * The configuration and the two ports' adapters, for the whole app. The embedded default keeps
 * events and read models in one SQLite file.
 */
@Global()
@Module({})
export class StorageModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: StorageModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: SQLITE_DATABASE, useFactory: () => openSqliteDatabase(config.sqliteFile) },
        { provide: EVENT_STORE, useFactory: (db: SqliteDatabase) => new SqliteEventStore(db), inject: [SQLITE_DATABASE] },
        { provide: READ_STORE, useFactory: (db: SqliteDatabase) => new SqliteReadStore(db), inject: [SQLITE_DATABASE] },
        StorageShutdown,
      ],
      exports: [APP_CONFIG, EVENT_STORE, READ_STORE],
    };
  }
}
