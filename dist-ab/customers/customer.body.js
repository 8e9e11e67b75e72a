"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
var __metadata = (this && this.__metadata) || function (k, v) {
    if (typeof Reflect === "object" && typeof Reflect.metadata === "function") return Reflect.metadata(k, v);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.CreateCustomerBody = exports.UpdateCustomerBody = void 0;
const field_rules_1 = require("../http/field-rules");
class UpdateCustomerBody {
    static { this.createOnly = ['postal_code', 'fax', 'registration_number', 'economical_number']; }
}
exports.UpdateCustomerBody = UpdateCustomerBody;
__decorate([
    (0, field_rules_1.Text)(255),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "name", void 0);
__decorate([
    (0, field_rules_1.Email)(),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "email", void 0);
__decorate([
    (0, field_rules_1.Mobile)(),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "mobile", void 0);
__decorate([
    (0, field_rules_1.Text)(1000),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "address", void 0);
__decorate([
    (0, field_rules_1.Text)(255),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "company", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], UpdateCustomerBody.prototype, "tel", void 0);
class CreateCustomerBody {
}
exports.CreateCustomerBody = CreateCustomerBody;
__decorate([
    (0, field_rules_1.Text)(255),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "name", void 0);
__decorate([
    (0, field_rules_1.Email)(),
    (0, field_rules_1.OneOfRequired)(['email', 'mobile']),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "email", void 0);
__decorate([
    (0, field_rules_1.Mobile)(),
    (0, field_rules_1.OneOfRequired)(['email', 'mobile']),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "mobile", void 0);
__decorate([
    (0, field_rules_1.Text)(1000),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "address", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "postal_code", void 0);
__decorate([
    (0, field_rules_1.Text)(255),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "company", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "tel", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "fax", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "registration_number", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], CreateCustomerBody.prototype, "economical_number", void 0);
//# sourceMappingURL=customer.body.js.map