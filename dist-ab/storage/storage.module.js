"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
var __param = (this && this.__param) || function (paramIndex, decorator) {
    return function (target, key) { decorator(target, key, paramIndex); }
};
var StorageModule_1;
Object.defineProperty(exports, "__esModule", { value: true });
exports.StorageModule = exports.usesSqliteFile = exports.DATA_KEYS = void 0;
exports.openEventStore = openEventStore;
exports.openKeyStore = openKeyStore;
exports.prepareSqliteFiles = prepareSqliteFiles;
exports.openReadStore = openReadStore;
exports.sharedSqliteConnection = sharedSqliteConnection;
exports.openStores = openStores;
const common_1 = require("@nestjs/common");
const config_1 = require("../config/config");
const event_store_port_1 = require("../event-store/event-store.port");
const eventstoredb_event_store_1 = require("../event-store/eventstoredb-event-store");
const sqlite_event_store_1 = require("../event-store/sqlite-event-store");
const read_store_port_1 = require("../read-store/read-store.port");
const mongodb_read_store_1 = require("../read-store/mongodb-read-store");
const sqlite_read_store_1 = require("../read-store/sqlite-read-store");
const instrumented_stores_1 = require("../metrics/instrumented-stores");
const metrics_1 = require("../metrics/metrics");
const sqlite_database_1 = require("./sqlite-database");
const data_keys_1 = require("../erasure/data-keys");
const mongodb_key_store_1 = require("../erasure/mongodb-key-store");
const sealed_event_store_1 = require("../erasure/sealed-event-store");
const seal_plaintext_events_1 = require("../erasure/seal-plaintext-events");
const sqlite_key_store_1 = require("../erasure/sqlite-key-store");
const read_models_1 = require("../read-models");
const node_path_1 = require("node:path");
let StorageShutdown = class StorageShutdown {
    constructor(eventStore, readStore) {
        this.eventStore = eventStore;
        this.readStore = readStore;
    }
    async onApplicationShutdown() {
        await this.eventStore.close();
        await this.readStore.close();
    }
};
StorageShutdown = __decorate([
    (0, common_1.Injectable)(),
    __param(0, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __param(1, (0, common_1.Inject)(read_store_port_1.READ_STORE)),
    __metadata("design:paramtypes", [Object, Object])
], StorageShutdown);
exports.DATA_KEYS = Symbol('DataKeys');
const SHARED_SQLITE = Symbol('SharedSqlite');
async function openEventStore(config, { keys, sqlite, log = (message) => new common_1.Logger('Storage').log(message), } = {}) {
    keys ??= new data_keys_1.DataKeys(await openKeyStore(config));
    if (config.eventStoreConnectionString) {
        const store = await eventstoredb_event_store_1.EventStoreDbEventStore.connect(config.eventStoreConnectionString, config.storeTimeoutMs ?? 5000);
        return new sealed_event_store_1.SealedEventStore(store, keys, read_models_1.RECORD_KINDS);
    }
    const store = new sqlite_event_store_1.SqliteEventStore(sqlite ?? (0, sqlite_database_1.openSqliteDatabase)(config.sqliteFile, { durable: true }));
    const sealed = await (0, seal_plaintext_events_1.sealPlaintextEvents)(store, keys, read_models_1.RECORD_KINDS);
    if (sealed > 0)
        log(`Sealed ${sealed} events written before encryption with their records' keys`);
    return new sealed_event_store_1.SealedEventStore(store, keys, read_models_1.RECORD_KINDS);
}
async function openKeyStore(config) {
    if (config.mongodb)
        return mongodb_key_store_1.MongoDbKeyStore.connect(config.mongodb.uri, config.mongodb.database, config.storeTimeoutMs ?? 5000);
    return new sqlite_key_store_1.SqliteKeyStore((0, sqlite_database_1.openSqliteDatabase)(keysFile(config), { durable: true }));
}
const keysFile = (config) => (0, node_path_1.join)((0, node_path_1.dirname)(config.sqliteFile), 'keys.sqlite');
function prepareSqliteFiles(config) {
    const files = [...((0, exports.usesSqliteFile)(config) ? [config.sqliteFile] : []), ...(config.mongodb ? [] : [keysFile(config)])];
    for (const file of files)
        (0, sqlite_database_1.openSqliteDatabase)(file, { durable: false }).close();
}
const usesSqliteFile = (config) => !config.eventStoreConnectionString || !config.mongodb;
exports.usesSqliteFile = usesSqliteFile;
async function openReadStore(config, sqlite) {
    if (config.mongodb)
        return mongodb_read_store_1.MongoDbReadStore.connect(config.mongodb.uri, config.mongodb.database, config.storeTimeoutMs ?? 5000);
    return new sqlite_read_store_1.SqliteReadStore(sqlite ?? (0, sqlite_database_1.openSqliteDatabase)(config.sqliteFile, { durable: false }));
}
function sharedSqliteConnection(config) {
    if (config.eventStoreConnectionString || config.mongodb)
        return null;
    return (0, sqlite_database_1.openSqliteDatabase)(config.sqliteFile, { durable: true });
}
async function openStores(config, { log } = {}) {
    const sqlite = sharedSqliteConnection(config);
    return { eventStore: await openEventStore(config, { sqlite, log }), readStore: await openReadStore(config, sqlite) };
}
let StorageModule = StorageModule_1 = class StorageModule {
    static forRoot(config) {
        return {
            module: StorageModule_1,
            providers: [
                { provide: config_1.APP_CONFIG, useValue: config },
                { provide: exports.DATA_KEYS, useFactory: async () => new data_keys_1.DataKeys(await openKeyStore(config)) },
                { provide: SHARED_SQLITE, useFactory: () => sharedSqliteConnection(config) },
                {
                    provide: event_store_port_1.EVENT_STORE,
                    useFactory: async (metrics, keys, sqlite) => new instrumented_stores_1.InstrumentedEventStore(await openEventStore(config, { keys, sqlite }), metrics),
                    inject: [metrics_1.Metrics, exports.DATA_KEYS, SHARED_SQLITE],
                },
                {
                    provide: read_store_port_1.READ_STORE,
                    useFactory: async (metrics, sqlite) => new instrumented_stores_1.InstrumentedReadStore(await openReadStore(config, sqlite), metrics),
                    inject: [metrics_1.Metrics, SHARED_SQLITE],
                },
                StorageShutdown,
            ],
            exports: [config_1.APP_CONFIG, event_store_port_1.EVENT_STORE, read_store_port_1.READ_STORE, exports.DATA_KEYS],
        };
    }
};
exports.StorageModule = StorageModule;
exports.StorageModule = StorageModule = StorageModule_1 = __decorate([
    (0, common_1.Global)(),
    (0, common_1.Module)({})
], StorageModule);
//# sourceMappingURL=storage.module.js.map