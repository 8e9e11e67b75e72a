"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EVENT_STORE = exports.WrongExpectedRevisionError = exports.START = void 0;
exports.comparePositions = comparePositions;
exports.START = { commit: -1n, prepare: -1n };
function comparePositions(a, b) {
    if (a.commit !== b.commit)
        return a.commit < b.commit ? -1 : 1;
    if (a.prepare !== b.prepare)
        return a.prepare < b.prepare ? -1 : 1;
    return 0;
}
class WrongExpectedRevisionError extends Error {
    constructor(streamId, expected, actual) {
        super(`Stream ${streamId}: expected revision ${String(expected)}, found ${String(actual)}`);
        this.streamId = streamId;
        this.expected = expected;
        this.actual = actual;
        this.name = 'WrongExpectedRevisionError';
    }
}
exports.WrongExpectedRevisionError = WrongExpectedRevisionError;
exports.EVENT_STORE = Symbol('EventStore');
//# sourceMappingURL=event-store.port.js.map