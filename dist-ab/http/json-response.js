"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.JSON_CONTENT_TYPE = void 0;
exports.sendJson = sendJson;
exports.JSON_CONTENT_TYPE = 'application/json; charset=UTF-8';
function sendJson(res, status, body) {
    const text = JSON.stringify(body);
    res.status(status);
    if (!res.req.complete) {
        res.setHeader('Connection', 'close');
        lingerOnClose(res.req.socket);
    }
    res.setHeader('Content-Type', exports.JSON_CONTENT_TYPE);
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
}
const LINGER_MS = 5_000;
function lingerOnClose(socket) {
    socket.destroySoon = () => {
        socket.end();
        socket.resume();
        const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
        socket.once('close', () => clearTimeout(timer));
    };
}
//# sourceMappingURL=json-response.js.map