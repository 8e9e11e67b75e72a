"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.parseListQuery = parseListQuery;
exports.parseAsOf = parseAsOf;
const errors_1 = require("../errors");
const field_rules_1 = require("./field-rules");
function parseListQuery(query, filterNames, defaultLimit = 10) {
    const faults = [];
    const limit = integerParameter(query, 'limit', faults, 1, 100) ?? defaultLimit;
    const offset = integerParameter(query, 'offset', faults, 0);
    const page = integerParameter(query, 'page', faults, 1);
    if (query.offset !== undefined && query.page !== undefined) {
        faults.push({ field: 'page', message: 'send either offset or page, not both' });
    }
    const filters = {};
    for (const name of filterNames) {
        const value = single(query, name, faults);
        if (value)
            filters[name] = field_rules_1.DIGIT_FIELDS.has(name) ? (0, field_rules_1.asciiDigits)(value) : value;
    }
    if (faults.length)
        throw (0, errors_1.validationFailed)(faults);
    return { limit, offset: offset ?? (page !== undefined ? (page - 1) * limit : 0), filters };
}
function parseAsOf(query) {
    const faults = [];
    const asOf = integerParameter(query, 'as_of', faults, 0);
    if (faults.length)
        throw (0, errors_1.validationFailed)(faults);
    return asOf;
}
function integerParameter(query, name, faults, min, max = Number.MAX_SAFE_INTEGER) {
    const raw = single(query, name, faults);
    if (raw === undefined)
        return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        faults.push({
            field: name,
            message: max === Number.MAX_SAFE_INTEGER ? `${name} must be an integer >= ${min}` : `${name} must be an integer from ${min} to ${max}`,
        });
        return undefined;
    }
    return Number(raw);
}
function single(query, name, faults) {
    const value = query[name];
    if (value === undefined || typeof value === 'string')
        return value;
    faults.push({ field: name, message: `${name} must be given once` });
    return undefined;
}
//# sourceMappingURL=list-query.js.map