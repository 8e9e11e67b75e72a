"use strict";
var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.ApiExceptionFilter = void 0;
const common_1 = require("@nestjs/common");
const errors_1 = require("../errors");
const store_unavailable_error_1 = require("../storage/store-unavailable.error");
const json_response_1 = require("./json-response");
let ApiExceptionFilter = class ApiExceptionFilter {
    constructor() {
        this.logger = new common_1.Logger('HTTP');
    }
    catch(exception, host) {
        const http = host.switchToHttp();
        const req = http.getRequest();
        const res = http.getResponse();
        const error = toApiError(exception, req);
        if (exception instanceof store_unavailable_error_1.StoreUnavailableError) {
            this.logger.warn(`${req.method} ${req.path} answered 503: ${exception.message}`);
        }
        else if (error.code === 'INTERNAL') {
            this.logger.error({ msg: `${req.method} ${req.path} failed`, requestId: req.requestId }, exception instanceof Error ? exception.stack : String(exception));
        }
        const details = error.details?.length ? bounded(error.details) : undefined;
        res.locals.error = { code: error.code, ...(details ? { fields: details.map((d) => d.field) } : {}) };
        if (res.headersSent)
            return void res.end();
        if (error.retryAfter !== undefined)
            res.setHeader('Retry-After', String(error.retryAfter));
        (0, json_response_1.sendJson)(res, error.status, {
            success: false,
            status: error.status,
            error: {
                code: error.code,
                message: error.message,
                ...(details ? { details } : {}),
            },
        });
    }
};
exports.ApiExceptionFilter = ApiExceptionFilter;
exports.ApiExceptionFilter = ApiExceptionFilter = __decorate([
    (0, common_1.Catch)()
], ApiExceptionFilter);
const MAX_DETAILS = 20;
const MAX_FIELD_NAME = 100;
function bounded(details) {
    const listed = details.slice(0, MAX_DETAILS).map(({ field, message }) => field.length > MAX_FIELD_NAME ? { field: `${field.slice(0, MAX_FIELD_NAME)}…`, message: message.replace(field, `${field.slice(0, MAX_FIELD_NAME)}…`) } : { field, message });
    if (details.length > MAX_DETAILS)
        listed.push({ field: '(more)', message: `${details.length - MAX_DETAILS} more faults not listed` });
    return listed;
}
function toApiError(exception, req) {
    if (exception instanceof errors_1.ApiError)
        return exception;
    if (exception instanceof store_unavailable_error_1.StoreUnavailableError) {
        return new errors_1.ApiError('UNAVAILABLE', 'The service cannot reach its storage right now; try again shortly.', undefined, 5);
    }
    if (exception instanceof common_1.NotFoundException) {
        return new errors_1.ApiError('NOT_FOUND', `No route for ${req.method} ${req.path}.`);
    }
    const status = exception instanceof common_1.HttpException ? exception.getStatus() : exception?.status;
    const type = exception?.type;
    if (status === 413 || type === 'entity.too.large') {
        return new errors_1.ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.');
    }
    if (status === 415 || type === 'encoding.unsupported') {
        return new errors_1.ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be uncompressed or gzip/deflate-encoded JSON.');
    }
    if (status === 400)
        return new errors_1.ApiError('VALIDATION_FAILED', 'The request is malformed.');
    return new errors_1.ApiError('INTERNAL', 'Internal server error.');
}
//# sourceMappingURL=api-exception.filter.js.map