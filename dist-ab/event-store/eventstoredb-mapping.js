"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.toEsdbExpectedRevision = toEsdbExpectedRevision;
exports.fromEsdbRevision = fromEsdbRevision;
exports.isTransientEsdbError = isTransientEsdbError;
exports.translateEsdbError = translateEsdbError;
exports.toStoredEvent = toStoredEvent;
exports.subscriptionFilter = subscriptionFilter;
exports.retryDelayMs = retryDelayMs;
const db_client_1 = require("@eventstore/db-client");
const store_unavailable_error_1 = require("../storage/store-unavailable.error");
const event_store_port_1 = require("./event-store.port");
function toEsdbExpectedRevision(expected) {
    if (expected === 'no_stream')
        return db_client_1.NO_STREAM;
    if (expected === 'any')
        return db_client_1.ANY;
    return BigInt(expected);
}
function fromEsdbRevision(revision) {
    if (revision > BigInt(Number.MAX_SAFE_INTEGER))
        throw new RangeError(`Stream revision ${revision} is too large`);
    return Number(revision);
}
const NOT_HANDLED = /Server Is (Not Ready|Busy)$/;
function isTransientEsdbError(error) {
    return (error instanceof db_client_1.UnavailableError ||
        error instanceof db_client_1.CancelledError ||
        error instanceof db_client_1.DeadlineExceededError ||
        error instanceof db_client_1.TimeoutError ||
        error instanceof db_client_1.NotLeaderError ||
        (error instanceof db_client_1.UnknownError && NOT_HANDLED.test(error.message)));
}
function translateEsdbError(error, streamId, expected) {
    if (error instanceof db_client_1.WrongExpectedVersionError && streamId !== undefined && expected !== undefined) {
        const actual = error.actualVersion;
        return new event_store_port_1.WrongExpectedRevisionError(streamId, expected, actual === db_client_1.NO_STREAM ? 'no_stream' : fromEsdbRevision(actual));
    }
    if (isTransientEsdbError(error))
        return new store_unavailable_error_1.StoreUnavailableError('EventStoreDB', error.message);
    return error;
}
function toStoredEvent(recorded) {
    if (!recorded.isJson)
        throw new Error(`Event ${recorded.id} of ${recorded.streamId} is not JSON`);
    if (!recorded.position)
        throw new Error(`Event ${recorded.id} of ${recorded.streamId} came without a position`);
    return {
        id: recorded.id,
        streamId: recorded.streamId,
        revision: fromEsdbRevision(recorded.revision),
        position: { commit: recorded.position.commit, prepare: recorded.position.prepare },
        type: recorded.type,
        data: recorded.data,
        metadata: recorded.metadata,
        recordedAt: recorded.created,
    };
}
function subscriptionFilter(streamPrefix, checkpointReached) {
    const common = { filterOn: db_client_1.STREAM_NAME, checkpointInterval: 1, checkpointReached };
    return streamPrefix ? { ...common, prefixes: [streamPrefix] } : { ...common, regex: '^[^$]' };
}
function retryDelayMs(attempt) {
    return Math.min(250 * 2 ** Math.max(0, attempt - 1), 10_000);
}
//# sourceMappingURL=eventstoredb-mapping.js.map