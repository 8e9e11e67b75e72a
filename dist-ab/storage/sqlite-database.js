"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.WalSync = exports.Database = void 0;
exports.openSqliteDatabase = openSqliteDatabase;
exports.checkpointAndTruncate = checkpointAndTruncate;
const node_fs_1 = require("node:fs");
const node_path_1 = require("node:path");
const promises_1 = require("node:timers/promises");
const node_worker_threads_1 = require("node:worker_threads");
const store_unavailable_error_1 = require("./store-unavailable.error");
const DRIVER = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3-v13' : 'better-sqlite3';
exports.Database = require(DRIVER);
function openSqliteDatabase(file, { durable }) {
    (0, node_fs_1.mkdirSync)((0, node_path_1.dirname)(file), { recursive: true, mode: 0o700 });
    (0, node_fs_1.closeSync)((0, node_fs_1.openSync)(file, 'a', 0o600));
    const db = new exports.Database(file);
    db.pragma('busy_timeout = 5000');
    db.pragma('journal_mode = WAL');
    db.pragma(durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
    db.pragma('secure_delete = ON');
    if (process.env.X_PRAGMAS) for (const p of process.env.X_PRAGMAS.split('+')) db.pragma(p);
    return db;
}
async function checkpointAndTruncate(db) {
    const deadline = Date.now() + db.pragma('busy_timeout', { simple: true });
    for (;;) {
        const [result] = db.pragma('wal_checkpoint(TRUNCATE)');
        if (result.busy === 0)
            return;
        if (Date.now() >= deadline) {
            throw new store_unavailable_error_1.StoreUnavailableError('SQLite', 'the write-ahead log could not be checkpointed: other connections kept reading');
        }
        await (0, promises_1.setTimeout)(5);
    }
}
const SYNCHRONOUS_FULL = 2;
const syncData = (fd) => new Promise((resolve, reject) => (0, node_fs_1.fdatasync)(fd, (error) => (error ? reject(error) : resolve())));
const CHECKPOINT_EVERY_MS = 250;
const COMMIT_CHECKPOINT_PAGES = 10_000;
const CHECKPOINT_SCRIPT = `
const { parentPort, workerData } = require('node:worker_threads');
const db = new (require(workerData.driver))(workerData.file);
db.pragma('synchronous = NORMAL');
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), workerData.everyMs);
parentPort.once('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;
class WalSync {
    constructor(wal, mark, file) {
        this.wal = wal;
        this.mark = mark;
        this.durable = 0;
        this.closed = false;
        this.checkpoints = new node_worker_threads_1.Worker(CHECKPOINT_SCRIPT, {
            eval: true,
            workerData: { driver: require.resolve(DRIVER), file, everyMs: CHECKPOINT_EVERY_MS },
        });
        this.checkpointsEnded = new Promise((resolve) => this.checkpoints.once('exit', resolve));
        this.checkpoints.on('error', () => undefined);
        this.checkpoints.unref();
    }
    static forDurable(db, mark) {
        if (db.pragma('synchronous', { simple: true }) !== SYNCHRONOUS_FULL)
            return undefined;
        db.pragma('synchronous = NORMAL');
        db.pragma(`wal_autocheckpoint = ${COMMIT_CHECKPOINT_PAGES}`);
        return new WalSync((0, node_fs_1.openSync)(`${db.name}-wal`, 'a', 0o600), mark, db.name);
    }
    async upTo(mark) {
        while (this.durable < mark) {
            if (this.closed)
                throw new Error('The store is closed: what it committed last may not be on disk');
            if (!this.syncing) {
                const upTo = this.mark();
                this.syncing = syncData(this.wal)
                    .then(() => void (this.durable = Math.max(this.durable, upTo)))
                    .finally(() => (this.syncing = undefined));
            }
            await this.syncing;
        }
    }
    async close() {
        this.closed = true;
        this.checkpoints.ref();
        this.checkpoints.postMessage('stop');
        await Promise.all([this.syncing?.catch(() => undefined), this.checkpointsEnded]);
        (0, node_fs_1.closeSync)(this.wal);
    }
}
exports.WalSync = WalSync;
//# sourceMappingURL=sqlite-database.js.map