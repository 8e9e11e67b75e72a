"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PROFILE_FILTERS = exports.profileProjection = void 0;
const record_projection_1 = require("../records/record.projection");
const profile_decider_1 = require("./profile.decider");
exports.profileProjection = (0, record_projection_1.recordProjection)(profile_decider_1.PROFILE, {
    name: 'profiles',
    filters: { email: 'exact-ci', tel: 'exact', site: 'contains-ci', slug: 'exact-ci' },
});
exports.PROFILE_FILTERS = Object.keys(exports.profileProjection.schema.filters);
//# sourceMappingURL=profile.projection.js.map