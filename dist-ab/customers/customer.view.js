"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CUSTOMER_SHORT_FIELDS = exports.CUSTOMER_FIELDS = void 0;
exports.customerView = customerView;
exports.CUSTOMER_FIELDS = ['name', 'email', 'mobile', 'address', 'postal_code', 'company', 'tel', 'fax', 'registration_number', 'economical_number'];
exports.CUSTOMER_SHORT_FIELDS = ['name', 'company', 'address', 'tel', 'email', 'mobile'];
function customerView(customer, shape) {
    const view = { id: customer.id };
    for (const field of shape === 'full' ? exports.CUSTOMER_FIELDS : exports.CUSTOMER_SHORT_FIELDS)
        view[field] = customer.fields[field] ?? '';
    view.created = customer.created;
    return view;
}
//# sourceMappingURL=customer.view.js.map