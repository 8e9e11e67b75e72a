"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.slugKey = exports.PROFILE = void 0;
exports.decideCreateProfile = decideCreateProfile;
exports.decideUpdateProfile = decideUpdateProfile;
exports.decideDeleteProfile = decideDeleteProfile;
const record_1 = require("../records/record");
exports.PROFILE = {
    label: 'Profile',
    streamPrefix: 'profile',
    events: { created: 'ProfileCreated', updated: 'ProfileUpdated', deleted: 'ProfileDeleted', erased: 'ProfileErased' },
};
const events = (0, record_1.recordEvents)(exports.PROFILE);
function decideCreateProfile(state, fields) {
    if (state)
        return [];
    return [events.created(fields)];
}
function decideUpdateProfile(state, accountId, update) {
    const profile = (0, record_1.ownedRecord)(exports.PROFILE, state, accountId);
    const changes = (0, record_1.changedFields)(profile.fields, update);
    return Object.keys(changes).length ? [events.updated(changes)] : [];
}
function decideDeleteProfile(state, accountId) {
    (0, record_1.ownedRecord)(exports.PROFILE, state, accountId);
    return [events.deleted()];
}
const slugKey = (slug) => slug.toLowerCase();
exports.slugKey = slugKey;
//# sourceMappingURL=profile.decider.js.map