"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.MAX_QUERY_PARAMETERS = void 0;
exports.edgeMiddleware = edgeMiddleware;
const helmet_1 = __importDefault(require("helmet"));
const node_crypto_1 = require("node:crypto");
const errors_1 = require("../errors");
const logging_1 = require("../logging/logging");
const json_body_middleware_1 = require("./json-body.middleware");
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
exports.MAX_QUERY_PARAMETERS = 1000;
const HELMET = { contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } };
function securityHeaders() {
    const headers = new Map();
    const res = { setHeader: (name, value) => headers.set(name, String(value)), removeHeader: (name) => headers.delete(name) };
    (0, helmet_1.default)(HELMET)({}, res, () => undefined);
    return [...headers];
}
function edgeMiddleware(logger, metrics) {
    const headers = securityHeaders();
    return (req, res, next) => {
        const started = performance.now();
        const sent = req.headers['x-request-id'];
        req.requestId = typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : (0, node_crypto_1.randomUUID)();
        res.setHeader('X-Request-Id', req.requestId);
        for (const [name, value] of headers)
            res.setHeader(name, value);
        res.on('close', () => {
            const ms = performance.now() - started;
            metrics.observeRequest(req, res, ms / 1000);
            (0, logging_1.logRequest)(logger, req, res, ms);
        });
        next(refusal(req));
    };
}
function refusal(req) {
    const { url } = req;
    if (url.includes('%')) {
        try {
            decodeURIComponent(req.path);
        }
        catch {
            return new errors_1.ApiError('NOT_FOUND', `No route for ${req.method} a path with malformed percent-encoding.`);
        }
    }
    const question = url.indexOf('?');
    if (question >= 0 && countParameters(url, question) > exports.MAX_QUERY_PARAMETERS) {
        return (0, errors_1.validationFailed)([{ field: '(query)', message: `the query has more than ${exports.MAX_QUERY_PARAMETERS} parameters` }]);
    }
    const expect = req.headers.expect;
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
        return new errors_1.ApiError('EXPECTATION_FAILED', 'Expect: 100-continue is the only expectation the service meets.');
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > json_body_middleware_1.BODY_LIMIT_BYTES) {
        return new errors_1.ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.');
    }
    return undefined;
}
function countParameters(url, question) {
    let count = 1;
    for (let i = url.indexOf('&', question); i >= 0 && count <= exports.MAX_QUERY_PARAMETERS; i = url.indexOf('&', i + 1))
        count++;
    return count;
}
//# sourceMappingURL=edge.js.map