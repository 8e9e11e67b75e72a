"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.BODY_LIMIT_BYTES = void 0;
exports.jsonBody = jsonBody;
const express_1 = __importDefault(require("express"));
const errors_1 = require("../errors");
exports.BODY_LIMIT_BYTES = 64 * 1024;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const TAKES_NO_BODY = /\/erase\/?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });
function requireJsonContentType(req, _res, next) {
    const mediaType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (mediaType !== 'application/json') {
        return next(new errors_1.ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON, sent with Content-Type: application/json.'));
    }
    next();
}
const rawBody = express_1.default.raw({ type: () => true, limit: exports.BODY_LIMIT_BYTES });
function readBody(req, res, next) {
    if (req.headers.expect !== undefined)
        res.writeContinue();
    rawBody(req, res, next);
}
function parseJson(req, _res, next) {
    const bytes = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    let text;
    try {
        text = utf8.decode(bytes).replace(/^\uFEFF/, '');
    }
    catch {
        return next(new errors_1.ApiError('MALFORMED_JSON', 'The request body is not valid UTF-8.'));
    }
    if (text.trim() === '')
        return next(new errors_1.ApiError('MALFORMED_JSON', 'The request body is empty; send a JSON object.'));
    try {
        req.body = JSON.parse(text);
    }
    catch (error) {
        return next(new errors_1.ApiError('MALFORMED_JSON', `The request body is not valid JSON: ${error.message}`));
    }
    next();
}
function jsonBody(req, res, next) {
    if (!METHODS_WITH_BODY.has(req.method)) {
        req.body = undefined;
        return next();
    }
    const takesNoBody = TAKES_NO_BODY.test(req.path);
    const sent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (takesNoBody && !sent) {
        req.body = undefined;
        return next();
    }
    const parsed = takesNoBody ? (error) => next(error ?? emptyBodyOnly(req.body)) : next;
    requireJsonContentType(req, res, (error) => {
        if (error)
            return next(error);
        readBody(req, res, (readError) => (readError ? next(readError) : parseJson(req, res, parsed)));
    });
}
function emptyBodyOnly(body) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return (0, errors_1.validationFailed)([{ field: '(body)', message: 'this operation takes no body; leave it out (or send {})' }]);
    }
    const fields = Object.keys(body);
    if (fields.length === 0)
        return undefined;
    return (0, errors_1.validationFailed)(fields.map((field) => ({ field, message: 'this operation takes no body fields' })));
}
//# sourceMappingURL=json-body.middleware.js.map