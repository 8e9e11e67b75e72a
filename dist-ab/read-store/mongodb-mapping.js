"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.generationId = exports.LEASES_COLLECTION = exports.GENERATIONS_COLLECTION = exports.READ_MODELS_COLLECTION = void 0;
exports.readModelCollection = readModelCollection;
exports.checkFieldNames = checkFieldNames;
exports.matchValue = matchValue;
exports.toMongoDocument = toMongoDocument;
exports.fromMongoDocument = fromMongoDocument;
exports.indexesFor = indexesFor;
exports.escapeRegex = escapeRegex;
exports.findFilter = findFilter;
exports.positionKey = positionKey;
exports.toMongoCheckpoint = toMongoCheckpoint;
exports.fromMongoCheckpoint = fromMongoCheckpoint;
exports.duplicateKeyFailures = duplicateKeyFailures;
exports.isDuplicateKey = isDuplicateKey;
exports.mongoClientOptions = mongoClientOptions;
exports.connectMongoClient = connectMongoClient;
exports.translateMongoError = translateMongoError;
const mongodb_1 = require("mongodb");
const config_1 = require("../config/config");
const store_unavailable_error_1 = require("../storage/store-unavailable.error");
exports.READ_MODELS_COLLECTION = 'read_models';
exports.GENERATIONS_COLLECTION = 'read_model_generations';
exports.LEASES_COLLECTION = 'read_model_leases';
const generationId = (collection, generation) => `${collection}:${generation}`;
exports.generationId = generationId;
const NAME = /^[a-z][a-z0-9_]*$/;
function readModelCollection(name, generation) {
    if (!NAME.test(name) || name.includes('__'))
        throw new Error(`Invalid collection name: ${name}`);
    return `rm_${name}__g${generation}`;
}
function checkFieldNames(schema) {
    for (const field of Object.keys(schema.filters)) {
        if (!NAME.test(field))
            throw new Error(`Invalid field name: ${field}`);
    }
}
function matchValue(kind, value) {
    return kind === 'exact' ? value : value.toLowerCase();
}
function toMongoDocument(schema, d) {
    const match = {};
    for (const [field, kind] of Object.entries(schema.filters))
        match[field] = matchValue(kind, d.fields[field] ?? '');
    return { _id: d.id, accountId: d.accountId, revision: d.revision, seq: d.seq, deleted: d.deleted, created: d.created, fields: d.fields, match };
}
function fromMongoDocument(m) {
    return { id: m._id, accountId: m.accountId, revision: m.revision, seq: m.seq, deleted: m.deleted, created: m.created, fields: m.fields };
}
const LIVE = { deleted: false };
function indexesFor(schema) {
    const exactFields = Object.keys(schema.filters).filter((f) => schema.filters[f] !== 'contains-ci');
    return [
        { name: 'live_by_account', key: { accountId: 1, seq: 1 }, partialFilterExpression: LIVE },
        ...exactFields.map((f) => ({
            name: `live_by_${f}`,
            key: { accountId: 1, [`match.${f}`]: 1, seq: 1 },
            partialFilterExpression: LIVE,
        })),
    ];
}
function escapeRegex(value) {
    return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\0/g, '\\x00');
}
function findFilter(collection, schema, query) {
    const filter = { accountId: query.accountId, ...LIVE };
    for (const [field, value] of Object.entries(query.filters)) {
        const kind = schema.filters[field];
        if (!kind)
            throw new Error(`Collection ${collection} has no filter ${field}`);
        const wanted = matchValue(kind, value);
        filter[`match.${field}`] = kind === 'contains-ci' ? { $regex: escapeRegex(wanted) } : wanted;
    }
    return filter;
}
function positionKey(position) {
    const part = (n) => {
        if (n < -1n)
            throw new RangeError(`Invalid position part ${n}`);
        return (n + 1n).toString().padStart(20, '0');
    };
    return `${part(position.commit)}:${part(position.prepare)}`;
}
function toMongoCheckpoint(position) {
    return { commit: position.commit.toString(), prepare: position.prepare.toString(), key: positionKey(position) };
}
function fromMongoCheckpoint(c) {
    return c.commit === undefined || c.prepare === undefined ? null : { commit: BigInt(c.commit), prepare: BigInt(c.prepare) };
}
const DUPLICATE_KEY = 11000;
function duplicateKeyFailures(error) {
    if (!(error instanceof mongodb_1.MongoBulkWriteError))
        return null;
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (writeErrors.length === 0 || writeErrors.some((w) => w.code !== DUPLICATE_KEY))
        return null;
    return writeErrors.map((w) => w.index);
}
function isDuplicateKey(error) {
    return error instanceof mongodb_1.MongoServerError && error.code === DUPLICATE_KEY;
}
function mongoClientOptions(timeoutMs) {
    return {
        appName: 'profiles-customers-service',
        serverSelectionTimeoutMS: timeoutMs,
        connectTimeoutMS: timeoutMs,
        waitQueueTimeoutMS: timeoutMs,
        socketTimeoutMS: timeoutMs,
        writeConcern: { w: 'majority', journal: true },
    };
}
const UNAVAILABLE_CODES = new Set([
    6,
    7,
    50,
    64,
    89,
    91,
    134,
    189,
    262,
    9001,
    10058,
    10107,
    11600,
    11602,
    13435,
    13436,
]);
function isUnavailable(error) {
    if (error instanceof mongodb_1.MongoServerSelectionError ||
        error instanceof mongodb_1.MongoNetworkError ||
        error instanceof mongodb_1.MongoOperationTimeoutError ||
        error instanceof mongodb_1.MongoTopologyClosedError ||
        error instanceof mongodb_1.MongoNotConnectedError) {
        return true;
    }
    if (error instanceof mongodb_1.MongoBulkWriteError) {
        const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
        if (error.code === undefined && writeErrors.length === 0)
            return true;
        if (writeErrors.some((w) => UNAVAILABLE_CODES.has(w.code)))
            return true;
    }
    return error instanceof mongodb_1.MongoError && typeof error.code === 'number' && UNAVAILABLE_CODES.has(error.code);
}
async function connectMongoClient(uri, timeoutMs) {
    let client;
    try {
        client = new mongodb_1.MongoClient(uri, mongoClientOptions(timeoutMs));
    }
    catch (error) {
        throw new config_1.ConfigError(`MONGODB_URI cannot be parsed: ${error.message}`);
    }
    try {
        await client.connect();
        return client;
    }
    catch (error) {
        await client.close().catch(() => undefined);
        const translated = translateMongoError(error);
        throw translated instanceof store_unavailable_error_1.StoreUnavailableError ? translated : new store_unavailable_error_1.StoreUnavailableError('MongoDB', error.message);
    }
}
function translateMongoError(error) {
    return isUnavailable(error) ? new store_unavailable_error_1.StoreUnavailableError('MongoDB', error.message) : error;
}
//# sourceMappingURL=mongodb-mapping.js.map