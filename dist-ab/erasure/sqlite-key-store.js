"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SqliteKeyStore = void 0;
const sqlite_database_1 = require("../storage/sqlite-database");
const data_keys_1 = require("./data-keys");
class SqliteKeyStore {
    constructor(db) {
        this.db = db;
        this.pending = [];
        this.commits = 0;
        db.exec(`
      CREATE TABLE IF NOT EXISTS data_keys (
        key_id    TEXT    PRIMARY KEY,
        key       BLOB,
        erased_by TEXT,
        erased_at INTEGER,
        pending   INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX IF NOT EXISTS data_keys_pending ON data_keys (key_id) WHERE pending = 1;
    `);
        this.insert = db.prepare('INSERT INTO data_keys (key_id, key) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING RETURNING key');
        this.selectOne = db.prepare('SELECT key FROM data_keys WHERE key_id = ?');
        this.selectMany = db.prepare('SELECT key_id, key FROM data_keys WHERE key_id IN (SELECT value FROM json_each(?))');
        this.markDestroyed = db.prepare(`INSERT INTO data_keys (key_id, key, erased_by, erased_at, pending) VALUES (@keyId, NULL, @erasedBy, @now, 1)
       ON CONFLICT (key_id) DO UPDATE SET key = NULL, erased_by = @erasedBy, erased_at = @now, pending = 1
       WHERE data_keys.erased_at IS NULL`);
        this.selectPending = db.prepare("SELECT key_id, erased_by FROM data_keys WHERE pending = 1 AND substr(key_id, 1, length(@prefix)) = @prefix");
        this.markFinished = db.prepare('UPDATE data_keys SET pending = 0 WHERE key_id = ?');
        const group = db.transaction((obtains) => obtains.map(({ keyId }) => (this.insert.get(keyId, (0, data_keys_1.randomBytesPooled)(data_keys_1.KEY_BYTES)) ?? this.selectOne.get(keyId)).key));
        this.obtainGroup = (obtains) => group.immediate(obtains);
        this.walSync = sqlite_database_1.WalSync.forDurable(db, () => this.commits);
    }
    async obtain(keyId, { isNew = false } = {}) {
        const row = isNew ? undefined : this.selectOne.get(keyId);
        if (row) {
            await this.walSync?.upTo(this.commits);
            return row.key;
        }
        return new Promise((resolve, reject) => {
            this.pending.push({ keyId, resolve, reject });
            if (this.pending.length === 1)
                setImmediate(() => this.obtainPending());
        });
    }
    async getMany(keyIds) {
        const found = new Map();
        if (keyIds.length === 0)
            return found;
        for (const row of this.selectMany.all(JSON.stringify(keyIds)))
            found.set(row.key_id, row.key);
        return found;
    }
    async destroy(keyId, erasedBy) {
        this.markDestroyed.run({ keyId, erasedBy, now: Date.now() });
        await this.synced();
        await (0, sqlite_database_1.checkpointAndTruncate)(this.db);
    }
    async pendingErasures(prefix) {
        return this.selectPending.all({ prefix }).map((r) => ({ keyId: r.key_id, erasedBy: r.erased_by }));
    }
    async finishErasure(keyId) {
        this.markFinished.run(keyId);
    }
    async close() {
        await this.walSync?.close();
        this.db.close();
    }
    async obtainPending() {
        const group = this.pending;
        this.pending = [];
        let keys;
        try {
            keys = this.obtainGroup(group);
            await this.synced();
        }
        catch (error) {
            for (const o of group)
                o.reject(error);
            return;
        }
        group.forEach((o, i) => o.resolve(keys[i]));
    }
    synced() {
        return this.walSync?.upTo(++this.commits) ?? Promise.resolve();
    }
}
exports.SqliteKeyStore = SqliteKeyStore;
//# sourceMappingURL=sqlite-key-store.js.map