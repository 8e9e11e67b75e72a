"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.BodyValidationPipe = void 0;
exports.toFields = toFields;
const common_1 = require("@nestjs/common");
const class_transformer_1 = require("class-transformer");
const class_validator_1 = require("class-validator");
const errors_1 = require("../errors");
const OUTPUT_ONLY = new Set(['id', 'logo', 'signature', 'default', 'created']);
let BodyValidationPipe = class BodyValidationPipe {
    transform(value, metadata) {
        const cls = metadata.metatype;
        if (metadata.type !== 'body' || !cls)
            return value;
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
            throw (0, errors_1.validationFailed)([{ field: '(body)', message: 'the request body must be a JSON object' }]);
        }
        const accepted = acceptedFields(cls);
        const faults = [];
        const known = {};
        for (const [field, v] of Object.entries(value)) {
            if (accepted.has(field))
                known[field] = typeof v === 'object' && v !== null ? {} : v;
            else
                faults.push({ field, message: refusal(cls, field) });
        }
        const instance = (0, class_transformer_1.plainToInstance)(cls, known);
        for (const error of (0, class_validator_1.validateSync)(instance)) {
            for (const message of Object.values(error.constraints ?? {}))
                faults.push({ field: error.property, message });
        }
        if (faults.length)
            throw (0, errors_1.validationFailed)(faults);
        return instance;
    }
};
exports.BodyValidationPipe = BodyValidationPipe;
exports.BodyValidationPipe = BodyValidationPipe = __decorate([
    (0, common_1.Injectable)()
], BodyValidationPipe);
const acceptedCache = new Map();
function acceptedFields(cls) {
    let fields = acceptedCache.get(cls);
    if (!fields) {
        const rules = (0, class_validator_1.getMetadataStorage)().getTargetValidationMetadatas(cls, '', true, false);
        fields = new Set(rules.map((r) => r.propertyName));
        acceptedCache.set(cls, fields);
    }
    return fields;
}
function refusal(cls, field) {
    if (OUTPUT_ONLY.has(field))
        return `${field} is set by the service and cannot be sent`;
    if (cls.createOnly?.includes(field))
        return `${field} can only be set when the record is created`;
    return `${field} is not a field this operation accepts`;
}
function toFields(body) {
    const fields = {};
    for (const [field, v] of Object.entries(body)) {
        if (v === undefined)
            continue;
        fields[field] = v === null ? '' : String(v);
    }
    return fields;
}
//# sourceMappingURL=body-validation.pipe.js.map