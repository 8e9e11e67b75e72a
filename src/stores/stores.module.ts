import { DynamicModule, Global, Inject, Injectable, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config/config';
import { EVENT_STORE, EventStore } from '../event-store/event-store.port';
import { SqliteEventStore } from '../event-store/sqlite-event-store';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { SqliteReadStore } from '../read-store/sqlite-read-store';
import { InstrumentedEventStore, InstrumentedReadStore, watchingWrites } from './instrumented-stores';
import { Metrics } from '../metrics/metrics';
import { openSqliteDatabase, SqliteDatabase } from '../storage/sqlite-database';
import { diskProbe, WriteFailures, type WrittenStore } from '../storage/write-failures';
import { DATA_KEYS, DataKeys } from '../sealing/data-keys';
import type { KeyStore } from '../key-store/key-store.port';
import { SealedEventStore, type SealedKind } from '../sealing/sealed-event-store';
import { UpcastingEventStore, type UpcastKind } from '../event-store/upcasting-event-store';
import { sealPlaintextEvents } from '../sealing/seal-plaintext-events';
import { SqliteKeyStore } from '../key-store/sqlite-key-store';
import { eraseAgain, ErasureLog } from '../key-store/erasure-log';
import { dirname, join } from 'node:path';

/** Closes the stores after everything that uses them has stopped (projectors stop on module destroy). */
@Injectable()
class StoresShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly writes: WriteFailures,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.writes.close();
    await this.eventStore.close();
    await this.readStore.close();
  }
}

/**
 * Where the stores are: the configuration's servers, else the SQLite file. The servers' adapters,
 * and their drivers, are loaded only when configured: on the embedded default, a third of a start's CPU.
 */
type StoreSettings = Pick<AppConfig, 'sqliteFile'> &
  Partial<Pick<AppConfig, 'eventStoreConnectionString' | 'eventStoreSilenceMs' | 'mongodb' | 'storeTimeoutMs' | 'rebuildRowids'>>;

const SHARED_SQLITE = Symbol('SharedSqlite');

/** What the stores need of a kind of record: its values sealed, its events upcast. */
export type StoredKind = SealedKind & UpcastKind;

/**
 * The event store the configuration selects (EventStoreDB, else SQLite), its records' values
 * sealed with their data keys: the service and the CLI open it the same way. Closing it closes the
 * key store too. `kinds`: the records whose values are sealed. `log` hears of a one-time sealing of older events (the CLI keeps stdout for data).
 */
export async function openEventStore(
  config: StoreSettings,
  kinds: StoredKind[],
  {
    keys,
    sqlite,
    log = (message) => new Logger('Storage').log(message),
    cacheMiB,
  }: { keys?: DataKeys; sqlite?: SqliteDatabase | null; log?: (message: string) => void; cacheMiB?: number } = {},
): Promise<EventStore> {
  keys ??= new DataKeys(await openKeyStore(config, cacheMiB));
  if (config.eventStoreConnectionString) {
    const { EventStoreDbEventStore } = await import('../event-store/eventstoredb-event-store');
    const store = await EventStoreDbEventStore.connect(config.eventStoreConnectionString, config.storeTimeoutMs ?? 5000, config.eventStoreSilenceMs);
    return UpcastingEventStore.open(new SealedEventStore(store, keys, kinds, { keyMakerCacheMiB: cacheMiB }), kinds);
  }
  const store = new SqliteEventStore(sqlite ?? openSqliteDatabase(config.sqliteFile, { durable: true, cacheMiB }));
  const sealed = await sealPlaintextEvents(store, keys, kinds, () =>
    log(
      `Sealing the events written before encryption with their records' keys, once (10,000-30,000 events/s; if stopped, the next start or command finishes it)`,
    ),
  );
  if (sealed > 0) log(`Sealed ${sealed} events written before encryption with their records' keys`);
  return UpcastingEventStore.open(new SealedEventStore(store, keys, kinds, { keyMakerCacheMiB: cacheMiB }), kinds);
}

/**
 * Where the records' data keys are: MongoDB when it is configured (never the event store: keys and
 * events are kept apart), else `keys.sqlite` beside the embedded store's file.
 */
export async function openKeyStore(config: StoreSettings, cacheMiB?: number): Promise<KeyStore> {
  if (config.mongodb) {
    const { MongoDbKeyStore } = await import('../key-store/mongodb-key-store');
    return MongoDbKeyStore.connect(config.mongodb.uri, config.mongodb.database, config.storeTimeoutMs ?? 5000);
  }
  return new SqliteKeyStore(openSqliteDatabase(keysFile(config), { durable: true, cacheMiB }));
}

export const keysFile = (config: StoreSettings) => join(dirname(config.sqliteFile), 'keys.sqlite');

/**
 * The erasure log, checked writable, and its erasures whose keys the key store still has destroyed
 * again (a restore from before them, by the restore command or by hand): they are then pending, and
 * finished (their events appended, their read models scrubbed) before the service answers.
 */
async function erasureLogChecked(config: Pick<AppConfig, 'erasureLog'>, store: KeyStore): Promise<ErasureLog> {
  const log = new ErasureLog(config.erasureLog);
  log.checkWritable();
  const again = await eraseAgain(log, store);
  if (again.length > 0) {
    new Logger('Erasures').warn(
      `Erased again ${again.length} records of the erasure log ${log.file} whose keys the key store still had (restored from before their erasure): ${again
        .slice(0, 5)
        .map((e) => e.key)
        .join(', ')}${again.length > 5 ? ', …' : ''}`,
    );
  }
  return log;
}

/**
 * Makes the SQLite files the configuration uses and switches them to WAL, then closes them: the
 * primary does it before WORKERS start, since workers opening a new file together race to switch
 * its journal, and SQLite answers the loser of that race with SQLITE_BUSY, busy timeout or not.
 */
export function prepareSqliteFiles(config: StoreSettings): void {
  const files = [...(usesSqliteFile(config) ? [config.sqliteFile] : []), ...(config.mongodb ? [] : [keysFile(config)])];
  for (const file of files) openSqliteDatabase(file, { durable: false }).close();
}

/** Whether the embedded store's file holds the events or the read models: unless both have a server. */
export const usesSqliteFile = (config: StoreSettings) => !config.eventStoreConnectionString || !config.mongodb;

/** The read store the configuration selects (MongoDB, else SQLite). */
export async function openReadStore(config: StoreSettings, sqlite?: SqliteDatabase | null): Promise<ReadStore> {
  if (config.mongodb) {
    const { MongoDbReadStore } = await import('../read-store/mongodb-read-store');
    return MongoDbReadStore.connect(config.mongodb.uri, config.mongodb.database, config.storeTimeoutMs ?? 5000);
  }
  return new SqliteReadStore(sqlite ?? openSqliteDatabase(config.sqliteFile, { durable: false }), config.rebuildRowids);
}

/**
 * With events and read models both in the embedded file, one connection for both stores, durable
 * (the event store's commits need it; the read models' are synced along). With a connection each,
 * every commit of one left the other's page cache stale, to be read again: one connection makes an
 * update cheaper in CPU. Both stores close it; closing twice is harmless.
 */
export function sharedSqliteConnection(config: StoreSettings, cacheMiB?: number): SqliteDatabase | null {
  if (config.eventStoreConnectionString || config.mongodb) return null;
  return openSqliteDatabase(config.sqliteFile, { durable: true, cacheMiB });
}

/** A probe of the disk under the SQLite files, for the stores kept there; none when every store has a server. */
function embeddedDiskProbe(config: StoreSettings) {
  const stores: WrittenStore[] = [
    ...(config.eventStoreConnectionString ? [] : ['event store' as const]),
    ...(config.mongodb ? [] : ['read store' as const, 'key store' as const]),
  ];
  return stores.length > 0 ? diskProbe(dirname(config.sqliteFile), stores) : undefined;
}

/**
 * Both stores, as the CLI and the benches open them (the service through StoresModule's providers).
 * `cacheMiB`: the page cache of the events' and the keys' SQLite connections (a bulk import's), else SQLite's default.
 */
export async function openStores(
  config: StoreSettings,
  kinds: StoredKind[],
  { log, cacheMiB }: { log?: (message: string) => void; cacheMiB?: number } = {},
): Promise<{ eventStore: EventStore; readStore: ReadStore }> {
  const sqlite = sharedSqliteConnection(config, cacheMiB);
  return { eventStore: await openEventStore(config, kinds, { sqlite, log, cacheMiB }), readStore: await openReadStore(config, sqlite) };
}

/**
 * The configuration and the ports' adapters, for the whole app, each chosen on its own. The
 * embedded default keeps events and read models in one SQLite file, through one connection
 * (sharedSqliteConnection), and the data keys in a file of their own.
 * Each adapter is wrapped to time its calls for /metrics.
 */
@Global()
@Module({})
export class StoresModule {
  static forRoot(config: AppConfig, kinds: StoredKind[]): DynamicModule {
    return {
      module: StoresModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        {
          provide: DATA_KEYS,
          useFactory: async (writes: WriteFailures) => {
            const store = await openKeyStore(config);
            return new DataKeys(watchingWrites(store, writes), config.keyCacheSize, await erasureLogChecked(config, store));
          },
          inject: [WriteFailures],
        },
        { provide: SHARED_SQLITE, useFactory: () => sharedSqliteConnection(config) },
        { provide: WriteFailures, useFactory: () => new WriteFailures(embeddedDiskProbe(config)) },
        {
          provide: EVENT_STORE,
          useFactory: async (metrics: Metrics, keys: DataKeys, sqlite: SqliteDatabase | null, writes: WriteFailures) =>
            new InstrumentedEventStore(await openEventStore(config, kinds, { keys, sqlite }), metrics, writes),
          inject: [Metrics, DATA_KEYS, SHARED_SQLITE, WriteFailures],
        },
        {
          provide: READ_STORE,
          useFactory: async (metrics: Metrics, sqlite: SqliteDatabase | null, writes: WriteFailures) =>
            new InstrumentedReadStore(await openReadStore(config, sqlite), metrics, writes),
          inject: [Metrics, SHARED_SQLITE, WriteFailures],
        },
        StoresShutdown,
      ],
      exports: [APP_CONFIG, EVENT_STORE, READ_STORE, DATA_KEYS, WriteFailures],
    };
  }
}
