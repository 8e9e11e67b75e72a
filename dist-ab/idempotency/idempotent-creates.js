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
Object.defineProperty(exports, "__esModule", { value: true });
exports.IdempotentCreates = exports.IDEMPOTENCY_TTL_MS = void 0;
exports.liveClaim = liveClaim;
const common_1 = require("@nestjs/common");
const node_crypto_1 = require("node:crypto");
const data_keys_1 = require("../erasure/data-keys");
const sealed_event_store_1 = require("../erasure/sealed-event-store");
const errors_1 = require("../errors");
const event_store_port_1 = require("../event-store/event-store.port");
const record_1 = require("../records/record");
const record_writer_1 = require("../records/record-writer");
const storage_module_1 = require("../storage/storage.module");
exports.IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const KEY = /^[\x21-\x7E]{1,255}$/;
const MAX_ATTEMPTS = 10;
const CLAIMED = 'IdempotencyKeyClaimed';
const ANSWERED = 'IdempotencyKeyAnswered';
function liveClaim(events, now) {
    const at = events.findLastIndex((e) => e.type === CLAIMED);
    if (at < 0 || now - events[at].recordedAt.getTime() >= exports.IDEMPOTENCY_TTL_MS)
        return undefined;
    return { claim: events[at], answer: events.slice(at + 1).find((e) => e.type === ANSWERED) };
}
const sha256 = (text) => (0, node_crypto_1.createHash)('sha256').update(text).digest('hex');
const usedWithAnotherRequest = () => new errors_1.ApiError('CONFLICT', 'This Idempotency-Key was used with a different request; use a new key for a new request.', [
    { field: 'Idempotency-Key', message: 'Idempotency-Key was used with a different request body' },
]);
let IdempotentCreates = class IdempotentCreates {
    constructor(eventStore, keys) {
        this.eventStore = eventStore;
        this.keys = keys;
    }
    async run(context, key, request, create) {
        if (key === undefined)
            return create((0, node_crypto_1.randomUUID)());
        if (!KEY.test(key)) {
            throw (0, errors_1.validationFailed)([{ field: 'Idempotency-Key', message: 'Idempotency-Key must be 1 to 255 printable ASCII characters, no spaces' }]);
        }
        const streamId = `idempotency-${sha256(`${context.accountId}\n${key}`)}`;
        const resource = `${request.kind.label.toLowerCase()}s`;
        const canonical = JSON.stringify([resource, Object.entries(request.fields).sort(([a], [b]) => (a < b ? -1 : 1))]);
        const keyOf = (recordId) => (0, record_1.streamIdOf)(request.kind, recordId);
        const metadata = (0, record_writer_1.eventMetadata)(context, (0, node_crypto_1.randomUUID)());
        for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            const events = await this.eventStore.readStream(streamId);
            const live = liveClaim(events, Date.now());
            let claim;
            let claimRevision;
            let dataKey;
            if (live) {
                claim = live.claim.data;
                if (claim.resource !== undefined && claim.resource !== resource)
                    throw usedWithAnotherRequest();
                const sealed = live.claim.metadata.schemaVersion >= sealed_event_store_1.SEALED_SCHEMA_VERSION;
                if (sealed) {
                    dataKey = (await this.keys.current(keyOf(claim.recordId))) ?? undefined;
                    if (!dataKey) {
                        throw new errors_1.ApiError('CONFLICT', `The ${request.kind.label.toLowerCase()} this Idempotency-Key created has been erased; use a new key to create a new one.`, [
                            { field: 'Idempotency-Key', message: 'Idempotency-Key belongs to an erased record' },
                        ]);
                    }
                }
                if (claim.fingerprint !== (dataKey ? (0, data_keys_1.digest)(dataKey, sha256(canonical)) : sha256(canonical)))
                    throw usedWithAnotherRequest();
                if (live.answer)
                    return openAnswer(live.answer.data, dataKey, streamId);
                claimRevision = live.claim.revision;
            }
            else {
                const recordId = (0, node_crypto_1.randomUUID)();
                dataKey = await this.keys.forWriting(keyOf(recordId), { isNew: true });
                claim = { fingerprint: (0, data_keys_1.digest)(dataKey, sha256(canonical)), recordId, resource };
                try {
                    const claimed = await this.eventStore.appendToStream(streamId, (0, record_writer_1.withMetadata)([{ type: CLAIMED, data: { ...claim } }], metadata), events.length ? events[events.length - 1].revision : 'no_stream');
                    claimRevision = claimed.revision;
                }
                catch (error) {
                    if (!(error instanceof event_store_port_1.WrongExpectedRevisionError))
                        throw error;
                    continue;
                }
            }
            const response = await create(claim.recordId);
            const answer = dataKey ? { revision: response.revision, sealed: (0, data_keys_1.seal)(dataKey, JSON.stringify(response.body), streamId) } : response;
            try {
                await this.eventStore.appendToStream(streamId, (0, record_writer_1.withMetadata)([{ type: ANSWERED, data: { ...answer } }], metadata), claimRevision);
                return response;
            }
            catch (error) {
                if (!(error instanceof event_store_port_1.WrongExpectedRevisionError))
                    throw error;
            }
        }
        throw new errors_1.ApiError('CONFLICT', 'Other requests with this Idempotency-Key are in progress right now; try again.');
    }
};
exports.IdempotentCreates = IdempotentCreates;
exports.IdempotentCreates = IdempotentCreates = __decorate([
    (0, common_1.Injectable)(),
    __param(0, (0, common_1.Inject)(event_store_port_1.EVENT_STORE)),
    __param(1, (0, common_1.Inject)(storage_module_1.DATA_KEYS)),
    __metadata("design:paramtypes", [Object, data_keys_1.DataKeys])
], IdempotentCreates);
function openAnswer(answer, dataKey, streamId) {
    if (!('sealed' in answer))
        return answer;
    return { revision: answer.revision, body: JSON.parse((0, data_keys_1.open)(dataKey, answer.sealed, streamId)) };
}
//# sourceMappingURL=idempotent-creates.js.map