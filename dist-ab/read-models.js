"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RECORD_KINDS = exports.READ_MODELS = void 0;
const customer_projection_1 = require("./customers/customer.projection");
const profile_projection_1 = require("./profiles/profile.projection");
const customer_decider_1 = require("./customers/customer.decider");
const profile_decider_1 = require("./profiles/profile.decider");
exports.READ_MODELS = [profile_projection_1.profileProjection, customer_projection_1.customerProjection];
exports.RECORD_KINDS = [profile_decider_1.PROFILE, customer_decider_1.CUSTOMER];
//# sourceMappingURL=read-models.js.map