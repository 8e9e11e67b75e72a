"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.recordEvents = exports.streamIdOf = void 0;
exports.evolveRecord = evolveRecord;
exports.ownedRecord = ownedRecord;
exports.decideErasure = decideErasure;
exports.changedFields = changedFields;
const errors_1 = require("../errors");
const streamIdOf = (kind, id) => `${kind.streamPrefix}-${id}`;
exports.streamIdOf = streamIdOf;
const recordEvents = (kind) => {
    const { created, updated, deleted } = kind.events;
    return {
        created: (fields) => ({ type: created, data: withoutEmpty(fields) }),
        updated: (changes) => ({ type: updated, data: changes }),
        deleted: () => ({ type: deleted, data: {} }),
        erased: () => ({ type: kind.events.erased, data: {} }),
    };
};
exports.recordEvents = recordEvents;
function evolveRecord(kind, state, event) {
    switch (event.type) {
        case kind.events.created:
            return {
                id: event.streamId.slice(kind.streamPrefix.length + 1),
                accountId: event.metadata.accountId,
                revision: event.revision,
                seq: Number(event.position.commit),
                deleted: false,
                created: Math.floor(event.recordedAt.getTime() / 1000),
                fields: { ...event.data },
            };
        case kind.events.updated:
            if (!state)
                throw new Error(`${event.type} before ${kind.events.created} in ${event.streamId}`);
            return { ...state, revision: event.revision, fields: { ...state.fields, ...event.data } };
        case kind.events.deleted:
            if (!state)
                throw new Error(`${event.type} before ${kind.events.created} in ${event.streamId}`);
            return { ...state, revision: event.revision, deleted: true };
        case kind.events.erased:
            if (!state)
                throw new Error(`${event.type} before ${kind.events.created} in ${event.streamId}`);
            return { ...state, revision: event.revision, deleted: true, erased: true, fields: {} };
        default:
            throw new Error(`Unknown event type ${event.type} in ${event.streamId}`);
    }
}
function ownedRecord(kind, state, accountId) {
    if (!state || state.deleted || state.accountId !== accountId)
        throw (0, errors_1.notFound)(kind.label);
    return state;
}
function decideErasure(kind, state, accountId) {
    if (!state || state.accountId !== accountId)
        throw (0, errors_1.notFound)(kind.label);
    return state.erased ? [] : [(0, exports.recordEvents)(kind).erased()];
}
function changedFields(current, update) {
    const changes = {};
    for (const [field, value] of Object.entries(update)) {
        if ((current[field] ?? '') !== value)
            changes[field] = value;
    }
    return changes;
}
function withoutEmpty(fields) {
    return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ''));
}
//# sourceMappingURL=record.js.map