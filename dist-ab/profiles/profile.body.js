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
exports.ProfileBody = void 0;
const field_rules_1 = require("../http/field-rules");
class ProfileBody {
}
exports.ProfileBody = ProfileBody;
__decorate([
    (0, field_rules_1.Text)(255),
    __metadata("design:type", Object)
], ProfileBody.prototype, "name", void 0);
__decorate([
    (0, field_rules_1.Text)(2000),
    __metadata("design:type", Object)
], ProfileBody.prototype, "description", void 0);
__decorate([
    (0, field_rules_1.Digits)(),
    __metadata("design:type", Object)
], ProfileBody.prototype, "tel", void 0);
__decorate([
    (0, field_rules_1.Email)(),
    __metadata("design:type", Object)
], ProfileBody.prototype, "email", void 0);
__decorate([
    (0, field_rules_1.Text)(1000),
    __metadata("design:type", Object)
], ProfileBody.prototype, "address", void 0);
__decorate([
    (0, field_rules_1.Text)(2048),
    __metadata("design:type", Object)
], ProfileBody.prototype, "site", void 0);
__decorate([
    (0, field_rules_1.Slug)(),
    __metadata("design:type", Object)
], ProfileBody.prototype, "slug", void 0);
__decorate([
    (0, field_rules_1.Text)(2048),
    __metadata("design:type", Object)
], ProfileBody.prototype, "messenger", void 0);
__decorate([
    (0, field_rules_1.Text)(2048),
    __metadata("design:type", Object)
], ProfileBody.prototype, "network_a", void 0);
__decorate([
    (0, field_rules_1.Text)(2048),
    __metadata("design:type", Object)
], ProfileBody.prototype, "network_b", void 0);
__decorate([
    (0, field_rules_1.Text)(2048),
    __metadata("design:type", Object)
], ProfileBody.prototype, "network_c", void 0);
//# sourceMappingURL=profile.body.js.map