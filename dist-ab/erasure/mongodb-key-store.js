"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MongoDbKeyStore = exports.DATA_KEYS_COLLECTION = void 0;
const mongodb_1 = require("mongodb");
const mongodb_mapping_1 = require("../read-store/mongodb-mapping");
const data_keys_1 = require("./data-keys");
exports.DATA_KEYS_COLLECTION = 'data_keys';
class MongoDbKeyStore {
    constructor(client, keys) {
        this.client = client;
        this.keys = keys;
    }
    static async connect(uri, database, timeoutMs) {
        const client = await (0, mongodb_mapping_1.connectMongoClient)(uri, timeoutMs);
        try {
            const keys = client.db(database).collection(exports.DATA_KEYS_COLLECTION);
            await keys.createIndex({ pending: 1 }, { name: 'pending', sparse: true });
            return new MongoDbKeyStore(client, keys);
        }
        catch (error) {
            await client.close().catch(() => undefined);
            throw (0, mongodb_mapping_1.translateMongoError)(error);
        }
    }
    async obtain(keyId, { isNew = false } = {}) {
        return this.guard(async () => {
            const found = isNew ? null : await this.keys.findOne({ _id: keyId });
            if (found)
                return bufferOf(found.key);
            try {
                await this.keys.insertOne({ _id: keyId, key: new mongodb_1.Binary((0, data_keys_1.randomBytesPooled)(data_keys_1.KEY_BYTES)) });
            }
            catch (error) {
                if (!(0, mongodb_mapping_1.isDuplicateKey)(error))
                    throw error;
            }
            return bufferOf((await this.keys.findOne({ _id: keyId })).key);
        });
    }
    async getMany(keyIds) {
        const found = new Map();
        if (keyIds.length === 0)
            return found;
        const docs = await this.guard(() => this.keys.find({ _id: { $in: keyIds } }).toArray());
        for (const d of docs)
            found.set(d._id, bufferOf(d.key));
        return found;
    }
    async destroy(keyId, erasedBy) {
        await this.guard(() => this.keys.updateOne({ _id: keyId, erasedAt: { $exists: false } }, { $set: { key: null, erasedBy, erasedAt: new Date(), pending: true } }, { upsert: true })).catch((error) => {
            if (!(0, mongodb_mapping_1.isDuplicateKey)(error))
                throw error;
        });
    }
    async pendingErasures(prefix) {
        const docs = await this.guard(() => this.keys.find({ pending: true }).toArray());
        return docs.filter((d) => d._id.startsWith(prefix)).map((d) => ({ keyId: d._id, erasedBy: d.erasedBy ?? '' }));
    }
    async finishErasure(keyId) {
        await this.guard(() => this.keys.updateOne({ _id: keyId }, { $unset: { pending: '' } }));
    }
    async close() {
        await this.client.close();
    }
    async guard(operation) {
        try {
            return await operation();
        }
        catch (error) {
            throw (0, mongodb_mapping_1.translateMongoError)(error);
        }
    }
}
exports.MongoDbKeyStore = MongoDbKeyStore;
const bufferOf = (key) => (key ? Buffer.from(key.buffer) : null);
//# sourceMappingURL=mongodb-key-store.js.map