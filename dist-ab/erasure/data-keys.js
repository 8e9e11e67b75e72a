"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DataKeys = exports.digest = exports.KEY_BYTES = exports.RecordErasedError = void 0;
exports.randomBytesPooled = randomBytesPooled;
exports.seal = seal;
exports.open = open;
exports.openOrNull = openOrNull;
const node_crypto_1 = require("node:crypto");
class RecordErasedError extends Error {
    constructor(keyId) {
        super(`${keyId} has been erased`);
        this.keyId = keyId;
        this.name = 'RecordErasedError';
    }
}
exports.RecordErasedError = RecordErasedError;
const KEYS_KEPT = 10_000;
exports.KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const randomPool = Buffer.alloc(4096);
let randomUsed = randomPool.length;
function randomBytesPooled(size) {
    if (randomUsed + size > randomPool.length) {
        (0, node_crypto_1.randomFillSync)(randomPool);
        randomUsed = 0;
    }
    const bytes = Buffer.allocUnsafeSlow(size);
    randomPool.copy(bytes, 0, randomUsed, randomUsed + size);
    randomPool.fill(0, randomUsed, randomUsed + size);
    randomUsed += size;
    return bytes;
}
function seal(key, plaintext, context) {
    const iv = randomBytesPooled(IV_BYTES);
    const cipher = (0, node_crypto_1.createCipheriv)('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
}
function open(key, sealed, context) {
    const bytes = Buffer.from(sealed, 'base64');
    const decipher = (0, node_crypto_1.createDecipheriv)('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const plaintext = decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)).toString('utf8');
    decipher.final();
    return plaintext;
}
function openOrNull(key, sealed, context) {
    if (!key)
        return null;
    try {
        return open(key, sealed, context);
    }
    catch {
        return null;
    }
}
const digest = (key, text) => (0, node_crypto_1.createHmac)('sha256', key).update(text).digest('hex');
exports.digest = digest;
class DataKeys {
    constructor(store, keepAtMost = KEYS_KEPT) {
        this.store = store;
        this.keepAtMost = keepAtMost;
        this.cache = new Map();
    }
    async forWriting(keyId, { isNew = false } = {}) {
        const cached = this.cache.get(keyId);
        if (cached)
            return this.keep(keyId, cached);
        const key = await this.store.obtain(keyId, { isNew });
        if (!key)
            throw new RecordErasedError(keyId);
        return this.keep(keyId, key);
    }
    async forReading(keyIds, { keep = true } = {}) {
        const found = new Map();
        const missing = [];
        for (const keyId of keyIds) {
            const cached = this.cache.get(keyId);
            if (cached)
                found.set(keyId, cached);
            else
                missing.push(keyId);
        }
        for (const [keyId, key] of await this.store.getMany(missing)) {
            if (key)
                found.set(keyId, keep ? this.keep(keyId, key) : key);
        }
        return found;
    }
    async current(keyId) {
        const key = (await this.store.getMany([keyId])).get(keyId) ?? null;
        if (!key)
            this.forget(keyId);
        return key;
    }
    async destroy(keyId, erasedBy) {
        this.forget(keyId);
        await this.store.destroy(keyId, erasedBy);
    }
    forget(keyId) {
        this.cache.delete(keyId);
    }
    keep(keyId, key) {
        this.cache.delete(keyId);
        this.cache.set(keyId, key);
        if (this.cache.size > this.keepAtMost)
            this.cache.delete(this.cache.keys().next().value);
        return key;
    }
}
exports.DataKeys = DataKeys;
//# sourceMappingURL=data-keys.js.map