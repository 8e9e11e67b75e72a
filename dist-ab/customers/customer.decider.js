"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CUSTOMER = void 0;
exports.decideCreateCustomer = decideCreateCustomer;
exports.decideUpdateCustomer = decideUpdateCustomer;
exports.decideDeleteCustomer = decideDeleteCustomer;
const errors_1 = require("../errors");
const record_1 = require("../records/record");
exports.CUSTOMER = {
    label: 'Customer',
    streamPrefix: 'customer',
    events: { created: 'CustomerCreated', updated: 'CustomerUpdated', deleted: 'CustomerDeleted', erased: 'CustomerErased' },
};
const events = (0, record_1.recordEvents)(exports.CUSTOMER);
function decideCreateCustomer(state, fields) {
    if (state)
        return [];
    requireEmailOrMobile(fields);
    return [events.created(fields)];
}
function decideUpdateCustomer(state, accountId, update) {
    const customer = (0, record_1.ownedRecord)(exports.CUSTOMER, state, accountId);
    requireEmailOrMobile({ ...customer.fields, ...update });
    const changes = (0, record_1.changedFields)(customer.fields, update);
    return Object.keys(changes).length ? [events.updated(changes)] : [];
}
function decideDeleteCustomer(state, accountId) {
    (0, record_1.ownedRecord)(exports.CUSTOMER, state, accountId);
    return [events.deleted()];
}
function requireEmailOrMobile(fields) {
    if (!fields.email && !fields.mobile) {
        const message = 'at least one of email and mobile must be filled in';
        throw (0, errors_1.validationFailed)([
            { field: 'email', message },
            { field: 'mobile', message },
        ]);
    }
}
//# sourceMappingURL=customer.decider.js.map