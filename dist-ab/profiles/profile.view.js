"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.PROFILE_FIELDS = void 0;
exports.profileView = profileView;
exports.PROFILE_FIELDS = ['name', 'description', 'tel', 'email', 'address', 'site', 'slug', 'messenger', 'network_a', 'network_b', 'network_c'];
function profileView(profile, isDefault) {
    const view = { id: profile.id };
    for (const field of exports.PROFILE_FIELDS)
        view[field] = profile.fields[field] ?? '';
    view.logo = '';
    view.signature = '';
    view.default = isDefault ? 1 : 0;
    view.created = profile.created;
    return view;
}
//# sourceMappingURL=profile.view.js.map