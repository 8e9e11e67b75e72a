"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.notFound = exports.validationFailed = exports.ApiError = void 0;
const STATUS = {
    VALIDATION_FAILED: 400,
    MALFORMED_JSON: 400,
    UNAUTHORIZED: 401,
    NOT_FOUND: 404,
    CONFLICT: 409,
    PRECONDITION_FAILED: 412,
    PAYLOAD_TOO_LARGE: 413,
    UNSUPPORTED_MEDIA_TYPE: 415,
    RATE_LIMITED: 429,
    MALFORMED_REQUEST: 400,
    REQUEST_TIMEOUT: 408,
    EXPECTATION_FAILED: 417,
    HEADERS_TOO_LARGE: 431,
    INTERNAL: 500,
    UNAVAILABLE: 503,
};
class ApiError extends Error {
    constructor(code, message, details, retryAfter) {
        super(message);
        this.code = code;
        this.details = details;
        this.retryAfter = retryAfter;
        this.name = 'ApiError';
        this.status = STATUS[code];
    }
}
exports.ApiError = ApiError;
const validationFailed = (details) => new ApiError('VALIDATION_FAILED', 'The request has invalid fields.', details);
exports.validationFailed = validationFailed;
const notFound = (what) => new ApiError('NOT_FOUND', `${what} not found.`);
exports.notFound = notFound;
//# sourceMappingURL=errors.js.map