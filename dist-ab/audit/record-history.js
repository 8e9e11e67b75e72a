"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.isErased = void 0;
exports.recordHistory = recordHistory;
exports.fieldChanges = fieldChanges;
exports.recordAsOf = recordAsOf;
const record_1 = require("../records/record");
function recordHistory(kind, events) {
    const erased = (0, exports.isErased)(kind, events);
    let state = null;
    return events.map((event) => {
        const before = state?.fields ?? {};
        state = (0, record_1.evolveRecord)(kind, state, event);
        return {
            event: event.type,
            revision: event.revision,
            occurred: event.recordedAt.toISOString(),
            actor: event.metadata.accountId,
            changes: erased ? Object.fromEntries(Object.keys(event.data).map((field) => [field, null])) : fieldChanges(before, state.fields),
        };
    });
}
const isErased = (kind, events) => events[events.length - 1]?.type === kind.events.erased;
exports.isErased = isErased;
function fieldChanges(before, after) {
    const changes = {};
    for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
        const from = before[field] ?? '';
        const to = after[field] ?? '';
        if (from !== to)
            changes[field] = { from, to };
    }
    return changes;
}
function recordAsOf(kind, events, asOf) {
    if ((0, exports.isErased)(kind, events))
        return null;
    let state = null;
    for (const event of events) {
        if (Math.floor(event.recordedAt.getTime() / 1000) > asOf)
            break;
        state = (0, record_1.evolveRecord)(kind, state, event);
    }
    return state;
}
//# sourceMappingURL=record-history.js.map