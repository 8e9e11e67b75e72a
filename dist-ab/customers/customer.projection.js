"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CUSTOMER_FILTERS = exports.customerProjection = void 0;
const record_projection_1 = require("../records/record.projection");
const customer_decider_1 = require("./customer.decider");
exports.customerProjection = (0, record_projection_1.recordProjection)(customer_decider_1.CUSTOMER, {
    name: 'customers',
    filters: { email: 'exact-ci', mobile: 'exact', company: 'contains-ci' },
});
exports.CUSTOMER_FILTERS = Object.keys(exports.customerProjection.schema.filters);
//# sourceMappingURL=customer.projection.js.map