"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.createHttpServer = createHttpServer;
const node_http_1 = require("node:http");
const errors_1 = require("../errors");
const json_response_1 = require("./json-response");
const PARSER_ERRORS = {
    HPE_HEADER_OVERFLOW: { code: 'HEADERS_TOO_LARGE', message: 'The request line and headers are larger than 16 KiB.' },
    ERR_HTTP_REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', message: 'The request was not received in time.' },
};
const MALFORMED = { code: 'MALFORMED_REQUEST', message: 'The request is not well-formed HTTP/1.1 (its framing, or a byte outside ASCII in its line or headers: percent-encode it).' };
function createHttpServer(handler, limits, logger) {
    const server = (0, node_http_1.createServer)({
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    }, handler);
    let open = 0;
    server.prependListener('connection', (socket) => {
        if (open >= limits.maxConnections)
            return void socket.destroy();
        open++;
        socket.once('close', () => open--);
    });
    server.on('clientError', (error, socket) => {
        if (error.code === 'ECONNRESET')
            return void socket.destroy();
        const { code, message } = PARSER_ERRORS[error.code ?? ''] ?? MALFORMED;
        const status = new errors_1.ApiError(code, message).status;
        logger.warn({ remoteAddress: socket.remoteAddress, res: { statusCode: status }, err: { code: error.code } }, `Refused a request Node could not take: ${status} ${code}`);
        if (!socket.writable || socket._httpMessage)
            return void socket.destroy();
        const body = JSON.stringify({ success: false, status, error: { code, message } });
        socket.end(`HTTP/1.1 ${status} ${statusText(status)}\r\nContent-Type: ${json_response_1.JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    server.on('checkContinue', (req, res) => server.emit('request', req, res));
    server.on('checkExpectation', (req, res) => server.emit('request', req, res));
    return server;
}
const statusText = (status) => ({ 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' })[status] ?? 'Bad Request';
//# sourceMappingURL=http-server.js.map