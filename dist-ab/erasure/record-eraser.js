"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RecordEraser = void 0;
const common_1 = require("@nestjs/common");
const node_crypto_1 = require("node:crypto");
const promises_1 = require("node:timers/promises");
const errors_1 = require("../errors");
const record_1 = require("../records/record");
const RETRY_MS = 1000;
class RecordEraser {
    constructor(kind, collection, writer, keys, readStore) {
        this.kind = kind;
        this.collection = collection;
        this.writer = writer;
        this.keys = keys;
        this.readStore = readStore;
        this.finishing = new Set();
        this.logger = new common_1.Logger(`${kind.label}Eraser`);
    }
    async erase(id, context, causationId, freeing) {
        const { state } = await this.writer.load(id);
        if (!state || state.accountId !== context.accountId)
            throw (0, errors_1.notFound)(this.kind.label);
        const streamId = (0, record_1.streamIdOf)(this.kind, id);
        if (!state.erased)
            await this.keys.destroy(streamId, context.accountId);
        let lagging;
        try {
            await this.writer.write(id, context, causationId, (current) => (0, record_1.decideErasure)(this.kind, current, context.accountId));
        }
        catch (error) {
            if (!isLagging(error))
                throw error;
            lagging = error;
        }
        await this.readStore.erase(this.collection, id);
        if (!lagging)
            await this.keys.store.finishErasure(streamId);
        else if (!this.finishing.has(id))
            void this.finishOnceShown(id, context);
        if (!state.erased)
            await freeing?.(state);
        if (lagging)
            throw lagging;
    }
    async finishOnceShown(id, context) {
        const streamId = (0, record_1.streamIdOf)(this.kind, id);
        this.finishing.add(id);
        try {
            for (;;) {
                await (0, promises_1.setTimeout)(RETRY_MS, undefined, { ref: false });
                try {
                    await this.writer.write(id, context, (0, node_crypto_1.randomUUID)(), (current) => (0, record_1.decideErasure)(this.kind, current, context.accountId));
                    await this.readStore.erase(this.collection, id);
                    await this.keys.store.finishErasure(streamId);
                    return;
                }
                catch (error) {
                    if (isLagging(error))
                        continue;
                    this.logger.warn(`Left the erasure of ${streamId} pending, to be finished at the next start: ${error.message}`);
                    return;
                }
            }
        }
        finally {
            this.finishing.delete(id);
        }
    }
    async finishPending() {
        const prefix = `${this.kind.streamPrefix}-`;
        for (const { keyId, erasedBy } of await this.keys.store.pendingErasures(prefix)) {
            const id = keyId.slice(prefix.length);
            const context = { accountId: erasedBy, requestId: (0, node_crypto_1.randomUUID)() };
            try {
                await this.writer.write(id, context, (0, node_crypto_1.randomUUID)(), (current) => (current ? (0, record_1.decideErasure)(this.kind, current, erasedBy) : []));
            }
            catch (error) {
                if (!isLagging(error))
                    throw error;
            }
            await this.readStore.erase(this.collection, id);
            await this.keys.store.finishErasure(keyId);
            this.logger.log(`Finished the erasure of ${keyId}, which a stop had interrupted`);
        }
    }
}
exports.RecordEraser = RecordEraser;
const isLagging = (error) => error instanceof errors_1.ApiError && error.code === 'UNAVAILABLE';
//# sourceMappingURL=record-eraser.js.map