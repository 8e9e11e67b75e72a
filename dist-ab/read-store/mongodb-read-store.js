"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MongoDbReadStore = void 0;
const event_store_port_1 = require("../event-store/event-store.port");
const mongodb_mapping_1 = require("./mongodb-mapping");
const read_store_port_1 = require("./read-store.port");
const LIVE_CACHE_MS = 1000;
class MongoDbReadStore {
    constructor(client, db) {
        this.client = client;
        this.db = db;
        this.schemas = new Map();
        this.liveCache = new Map();
        this.readModels = db.collection(mongodb_mapping_1.READ_MODELS_COLLECTION);
        this.generations = db.collection(mongodb_mapping_1.GENERATIONS_COLLECTION);
        this.leases = db.collection(mongodb_mapping_1.LEASES_COLLECTION);
    }
    static async connect(uri, database, timeoutMs) {
        const client = await (0, mongodb_mapping_1.connectMongoClient)(uri, timeoutMs);
        return new MongoDbReadStore(client, client.db(database));
    }
    async ensureCollection(schema) {
        (0, mongodb_mapping_1.checkFieldNames)(schema);
        (0, mongodb_mapping_1.readModelCollection)(schema.name, 1);
        await this.guard(async () => {
            await this.ignoreDuplicate(() => this.readModels.updateOne({ _id: schema.name }, { $setOnInsert: { live: 1, building: null, next: 2 } }, { upsert: true }));
            await this.ignoreDuplicate(() => this.generations.updateOne({ _id: (0, mongodb_mapping_1.generationId)(schema.name, 1) }, { $setOnInsert: { collection: schema.name, generation: 1, failure: null, updatedAt: new Date() } }, { upsert: true }));
            const { live } = await this.readModel(schema.name);
            await this.collection(schema.name, live).createIndexes((0, mongodb_mapping_1.indexesFor)(schema));
        });
        this.schemas.set(schema.name, schema);
    }
    async getMany(collection, ids, generation) {
        this.schema(collection);
        const found = new Map();
        if (ids.length === 0)
            return found;
        if (generation !== undefined)
            await this.assertWritable(collection, generation);
        const g = generation ?? (await this.liveGeneration(collection));
        const docs = await this.guard(() => this.collection(collection, g).find({ _id: { $in: ids } }).toArray());
        for (const d of docs)
            found.set(d._id, (0, mongodb_mapping_1.fromMongoDocument)(d));
        return found;
    }
    async get(collection, accountId, id) {
        this.schema(collection);
        const g = await this.liveGeneration(collection);
        const d = await this.guard(() => this.collection(collection, g).findOne({ _id: id, accountId, deleted: false }));
        return d ? (0, mongodb_mapping_1.fromMongoDocument)(d) : null;
    }
    async oldest(collection, accountId) {
        this.schema(collection);
        const g = await this.liveGeneration(collection);
        const d = await this.guard(() => this.collection(collection, g).findOne({ accountId, deleted: false }, { sort: { seq: 1 } }));
        return d ? (0, mongodb_mapping_1.fromMongoDocument)(d) : null;
    }
    async find(collection, query) {
        const filter = (0, mongodb_mapping_1.findFilter)(collection, this.schema(collection), query);
        const c = this.collection(collection, await this.liveGeneration(collection));
        const [docs, total] = await this.guard(() => Promise.all([
            c.find(filter).sort({ seq: query.order === 'newest' ? -1 : 1 }).skip(query.offset).limit(query.limit).toArray(),
            c.countDocuments(filter),
        ]));
        return { documents: docs.map(mongodb_mapping_1.fromMongoDocument), total };
    }
    async commit(collection, documents, checkpoint) {
        const schema = this.schema(collection);
        const { generation, position } = checkpoint;
        await this.assertWritable(collection, generation);
        const operations = documents.map((d) => {
            const { _id, ...replacement } = (0, mongodb_mapping_1.toMongoDocument)(schema, d);
            return { replaceOne: { filter: { _id, revision: { $lt: d.revision } }, replacement, upsert: true } };
        });
        await this.guard(() => this.writeGuarded(this.collection(collection, generation), operations));
        const next = (0, mongodb_mapping_1.toMongoCheckpoint)(position);
        const _id = (0, mongodb_mapping_1.generationId)(collection, generation);
        await this.guard(async () => {
            const moved = await this.generations.updateOne({ _id, $or: [{ key: { $exists: false } }, { key: { $lt: next.key } }] }, { $set: { ...next, failure: null, updatedAt: new Date() } });
            if (moved.matchedCount === 0)
                await this.generations.updateOne({ _id }, { $set: { failure: null, updatedAt: new Date() } });
        });
    }
    async recordFailure(collection, generation, failure) {
        await this.guard(() => this.generations.updateOne({ _id: (0, mongodb_mapping_1.generationId)(collection, generation) }, { $set: { failure, updatedAt: new Date() } }));
    }
    async status(collection) {
        const model = await this.readModel(collection);
        this.liveCache.set(collection, { generation: model.live, at: Date.now() });
        const wanted = [model.live, ...(model.building === null ? [] : [model.building])].map((g) => (0, mongodb_mapping_1.generationId)(collection, g));
        const docs = await this.guard(() => this.generations.find({ _id: { $in: wanted } }).toArray());
        const statusOf = (generation) => {
            const d = docs.find((x) => x.generation === generation);
            return {
                generation,
                position: d ? (0, mongodb_mapping_1.fromMongoCheckpoint)(d) : null,
                failure: d?.failure ?? null,
                updatedAt: d ? d.updatedAt.getTime() : 0,
            };
        };
        return { live: statusOf(model.live), building: model.building === null ? null : statusOf(model.building) };
    }
    async startRebuild(collection) {
        const schema = this.schema(collection);
        let model = await this.readModel(collection);
        let claimed = await this.claimNext(model);
        if (!claimed) {
            const now = await this.readModel(collection);
            if (now.next === model.next)
                claimed = await this.claimNext((model = now));
        }
        if (!claimed)
            throw new Error(`Another rebuild of ${collection} started at the same time`);
        if (model.building !== null)
            await this.dropGeneration(collection, model.building);
        const generation = model.next;
        await this.guard(async () => {
            await this.generations.replaceOne({ _id: (0, mongodb_mapping_1.generationId)(collection, generation) }, { collection, generation, failure: null, updatedAt: new Date() }, { upsert: true });
            await this.collection(collection, generation).createIndexes((0, mongodb_mapping_1.indexesFor)(schema));
        });
        return generation;
    }
    async claimNext(model) {
        const taken = await this.guard(() => this.readModels.updateOne({ _id: model._id, next: model.next, building: model.building }, { $set: { building: model.next, next: model.next + 1 } }));
        return taken.matchedCount > 0;
    }
    async abandonRebuild(collection, generation) {
        if ((await this.readModel(collection)).building !== generation)
            return;
        await this.dropGeneration(collection, generation);
        await this.guard(() => this.readModels.updateOne({ _id: collection, building: generation }, { $set: { building: null } }));
    }
    async promote(collection, generation) {
        const model = await this.readModel(collection);
        if (model.building !== generation)
            throw new read_store_port_1.GenerationReplacedError(collection, generation);
        const { live, building } = await this.status(collection);
        if ((0, event_store_port_1.comparePositions)(building.position ?? event_store_port_1.START, live.position ?? event_store_port_1.START) < 0)
            throw new read_store_port_1.RebuildBehindError(collection);
        await this.guard(async () => {
            const swapped = await this.readModels.updateOne({ _id: collection, live: model.live, building: generation }, { $set: { live: generation, building: null } });
            if (swapped.matchedCount === 0)
                throw new read_store_port_1.GenerationReplacedError(collection, generation);
            const now = new Date();
            await this.generations.updateOne({ _id: (0, mongodb_mapping_1.generationId)(collection, model.live) }, { $set: { retiredAt: now, updatedAt: now } });
        });
        this.liveCache.delete(collection);
    }
    async erase(collection, id) {
        const schema = this.schema(collection);
        const blanks = Object.fromEntries(Object.keys(schema.filters).map((f) => [`match.${f}`, '']));
        const stored = await this.guard(() => this.generations.find({ collection, dropped: { $ne: true } }).toArray());
        for (const { generation } of stored) {
            await this.guard(() => this.collection(collection, generation).updateOne({ _id: id }, { $set: { fields: {}, deleted: true, ...blanks } }));
        }
    }
    async dropRetired(collection, graceMs) {
        const before = new Date(Date.now() - graceMs);
        const { live } = await this.readModel(collection);
        const retired = await this.guard(() => this.generations
            .find({
            collection,
            generation: { $lt: live },
            dropped: { $ne: true },
            $or: [{ retiredAt: { $lte: before } }, { retiredAt: { $exists: false }, updatedAt: { $lte: before } }],
        })
            .toArray());
        for (const r of retired)
            await this.dropGeneration(collection, r.generation);
    }
    async acquireLease(name, holder, ttlMs, replacing) {
        return this.guard(async () => {
            try {
                await this.leases.updateOne({ _id: name, $or: [{ holder: { $in: replacing ? [holder, replacing] : [holder] } }, { $expr: { $lte: ['$expiresAt', '$$NOW'] } }] }, [{ $set: { holder, expiresAt: { $add: ['$$NOW', ttlMs] } } }], { upsert: true });
                return holder;
            }
            catch (error) {
                if (!(0, mongodb_mapping_1.isDuplicateKey)(error))
                    throw error;
                return (await this.leases.findOne({ _id: name }))?.holder ?? '';
            }
        });
    }
    async releaseLease(name, holder) {
        await this.guard(() => this.leases.deleteOne({ _id: name, holder }));
    }
    async close() {
        await this.client.close();
    }
    async writeGuarded(c, operations) {
        if (operations.length === 0)
            return;
        let pending = operations;
        for (let attempt = 1; attempt <= 2 && pending.length > 0; attempt++) {
            try {
                await c.bulkWrite(pending, { ordered: false });
                return;
            }
            catch (error) {
                const duplicates = (0, mongodb_mapping_1.duplicateKeyFailures)(error);
                if (!duplicates)
                    throw error;
                pending = duplicates.map((i) => pending[i]);
            }
        }
    }
    async dropGeneration(collection, generation) {
        await this.guard(async () => {
            await this.collection(collection, generation).drop().catch((error) => {
                if (error.codeName !== 'NamespaceNotFound')
                    throw error;
            });
            await this.generations.updateOne({ _id: (0, mongodb_mapping_1.generationId)(collection, generation) }, { $set: { dropped: true, updatedAt: new Date() } });
        });
    }
    async readModel(collection) {
        const model = await this.guard(() => this.readModels.findOne({ _id: collection }));
        if (!model)
            throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
        return model;
    }
    async liveGeneration(collection) {
        const cached = this.liveCache.get(collection);
        if (cached && Date.now() - cached.at < LIVE_CACHE_MS)
            return cached.generation;
        const { live } = await this.readModel(collection);
        this.liveCache.set(collection, { generation: live, at: Date.now() });
        return live;
    }
    async assertWritable(collection, generation) {
        const { live, building } = await this.readModel(collection);
        if (generation !== live && generation !== building)
            throw new read_store_port_1.GenerationReplacedError(collection, generation);
    }
    async ignoreDuplicate(operation) {
        try {
            await operation();
        }
        catch (error) {
            if (!(0, mongodb_mapping_1.isDuplicateKey)(error))
                throw error;
        }
    }
    collection(name, generation) {
        return this.db.collection((0, mongodb_mapping_1.readModelCollection)(name, generation));
    }
    schema(name) {
        const schema = this.schemas.get(name);
        if (!schema)
            throw new Error(`Unknown collection ${name}: call ensureCollection first`);
        return schema;
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
exports.MongoDbReadStore = MongoDbReadStore;
//# sourceMappingURL=mongodb-read-store.js.map