"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.OneOfRequired = exports.Slug = exports.Email = exports.Mobile = exports.Digits = exports.Text = exports.asciiDigits = exports.DIGIT_FIELDS = void 0;
const common_1 = require("@nestjs/common");
const swagger_1 = require("@nestjs/swagger");
const class_transformer_1 = require("class-transformer");
const class_validator_1 = require("class-validator");
const CLEARED = { type: 'string', nullable: true, enum: ['', null], description: 'no value: clears the field' };
exports.DIGIT_FIELDS = new Set(['tel', 'mobile', 'postal_code', 'fax', 'registration_number', 'economical_number']);
const asciiDigits = (value) => value.replace(/[\u06F0-\u06F9\u0660-\u0669]/g, (d) => String(d.charCodeAt(0) & 0xf));
exports.asciiDigits = asciiDigits;
const isBlank = (v) => v === undefined || v === null || v === '';
const isText = (v) => typeof v === 'string' && v.isWellFormed();
function rule(name, test, message, doc) {
    return (target, property) => {
        const propertyName = String(property);
        if (doc)
            (0, swagger_1.ApiPropertyOptional)(doc)(target, propertyName);
        (0, class_validator_1.registerDecorator)({
            name,
            target: target.constructor,
            propertyName,
            validator: {
                validate: (value, args) => test(value, args?.object),
                defaultMessage: (args) => message(args?.property ?? propertyName, args?.value),
            },
        });
    };
}
const Text = (max) => rule('text', (v) => v === undefined || v === null || (isText(v) && [...v].length <= max), (f) => `${f} must be a string of at most ${max} characters`, { type: 'string', maxLength: max, nullable: true });
exports.Text = Text;
const AsciiDigits = () => (0, class_transformer_1.Transform)(({ value }) => (typeof value === 'string' ? (0, exports.asciiDigits)(value) : value));
const DIGITS_NOTE = 'Persian (۰-۹) and Arabic-Indic (٠-٩) digits are taken too, and answered as ASCII';
const Digits = () => (0, common_1.applyDecorators)(AsciiDigits(), rule('digits', (v) => isBlank(v) || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) || (typeof v === 'string' && /^[0-9]{1,20}$/.test(v)), (f) => `${f} must be a non-negative integer (at most 2^53-1) or a string of 1 to 20 digits`, {
    oneOf: [
        { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
        { type: 'string', pattern: '^[0-9\u06F0-\u06F9\u0660-\u0669]{1,20}$', description: `leading zeros are kept; ${DIGITS_NOTE}` },
        CLEARED,
    ],
}));
exports.Digits = Digits;
const Mobile = () => (0, common_1.applyDecorators)(AsciiDigits(), rule('mobile', (v) => isBlank(v) || (typeof v === 'string' && /^[0-9]{11}$/.test(v)) || (typeof v === 'number' && Number.isInteger(v) && v >= 1e10 && v < 1e11), (f, v) => typeof v === 'number' && Number.isInteger(v) && v >= 1e9 && v < 1e10
    ? `${f} must be exactly 11 digits; an integer loses its leading zero, so send it as a string, e.g. "0${v}"`
    : `${f} must be exactly 11 digits`, {
    oneOf: [
        { type: 'string', pattern: '^[0-9\u06F0-\u06F9\u0660-\u0669]{11}$', description: `leading zeros are kept; ${DIGITS_NOTE}` },
        { type: 'integer', minimum: 1e10, maximum: 1e11 - 1 },
        CLEARED,
    ],
}));
exports.Mobile = Mobile;
const Email = () => rule('email', (v) => isBlank(v) || (isText(v) && v.length <= 254 && (0, class_validator_1.isEmail)(v)), (f) => `${f} must be a valid e-mail address of at most 254 characters`, { oneOf: [{ type: 'string', format: 'email', maxLength: 254 }, CLEARED] });
exports.Email = Email;
const Slug = () => rule('slug', (v) => isBlank(v) || (typeof v === 'string' && /^[A-Za-z0-9]{1,64}$/.test(v)), (f) => `${f} must be 1 to 64 English letters and digits`, {
    oneOf: [{ type: 'string', pattern: '^[A-Za-z0-9]{1,64}$' }, CLEARED],
    description: 'store code, unique across the service ignoring case',
});
exports.Slug = Slug;
const OneOfRequired = (fields) => rule('oneOfRequired', (_v, object) => fields.some((f) => !isBlank(object[f])), () => `at least one of ${fields.join(' and ')} must be filled in`);
exports.OneOfRequired = OneOfRequired;
//# sourceMappingURL=field-rules.js.map