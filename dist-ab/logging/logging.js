"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.NestPinoLogger = void 0;
exports.redactUrl = redactUrl;
exports.createLogger = createLogger;
exports.logRequest = logRequest;
const node_querystring_1 = require("node:querystring");
const pino_1 = __importDefault(require("pino"));
const REDACTED = '[REDACTED]';
const PLAIN_PARAMETERS = new Set(['limit', 'offset', 'page', 'as_of']);
function redactUrl(url) {
    const question = url.indexOf('?');
    if (question < 0)
        return url;
    const params = url
        .slice(question + 1)
        .split('&')
        .map((param) => {
        const name = param.split('=', 1)[0];
        return PLAIN_PARAMETERS.has((0, node_querystring_1.unescape)(name.replace(/\+/g, ' '))) || param === name ? param : `${name}=${REDACTED}`;
    });
    return `${url.slice(0, question + 1)}${params.join('&')}`;
}
const LOGGED_HEADERS = ['host', 'user-agent', 'content-type', 'content-length', 'content-encoding', 'accept', 'x-forwarded-for', 'x-forwarded-proto', 'if-match', 'idempotency-key'];
const CREDENTIAL_HEADERS = ['authorization', 'cookie'];
const TOKEN_IN_VALUE = /(access(?:_|%5f)token=)[^&\s]*/gi;
const scrub = (value) => (value.includes('=') ? value.replace(TOKEN_IN_VALUE, `$1${REDACTED}`) : value);
function loggedHeaders(headers) {
    const logged = {};
    for (const name of LOGGED_HEADERS) {
        const value = headers[name];
        if (value !== undefined)
            logged[name] = scrub(String(value));
    }
    for (const name of CREDENTIAL_HEADERS)
        if (headers[name] !== undefined)
            logged[name] = REDACTED;
    return logged;
}
let lastMs = 0;
let lastTime = '';
function isoTime() {
    const now = Date.now();
    if (now !== lastMs) {
        lastMs = now;
        lastTime = `,"time":"${new Date(now).toISOString()}"`;
    }
    return lastTime;
}
const LOG_FLUSH_MS = 200;
function createLogger(level, destination) {
    const options = { level, base: { pid: process.pid }, timestamp: isoTime };
    if (destination)
        return (0, pino_1.default)(options, destination);
    const stdout = pino_1.default.destination({ dest: 1, minLength: 8192, sync: false });
    setInterval(() => stdout.flush(), LOG_FLUSH_MS).unref();
    return (0, pino_1.default)(options, stdout);
}
function logRequest(logger, req, res, ms) {
    if (!logger.isLevelEnabled('info'))
        return;
    const url = redactUrl(req.originalUrl);
    const error = res.locals?.error;
    logger.info({
        requestId: req.requestId,
        req: { method: req.method, url, headers: loggedHeaders(req.headers), remoteAddress: req.socket.remoteAddress },
        res: { statusCode: res.statusCode, ...(error ? { error } : {}) },
        responseTime: Math.round(ms),
        ...(res.writableFinished ? {} : { aborted: true }),
    }, `${req.method} ${url} ${res.statusCode}${error ? ` ${error.code}${error.fields ? ` ${error.fields.join(', ')}` : ''}` : ''}`);
}
const NEST_WIRING = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);
const NEST_TO_PINO = { log: 'info', error: 'error', warn: 'warn', debug: 'debug', verbose: 'debug', fatal: 'fatal' };
class NestPinoLogger {
    constructor(logger) {
        this.logger = logger;
    }
    log(message, ...rest) {
        this.write('log', message, rest);
    }
    error(message, ...rest) {
        this.write('error', message, rest);
    }
    warn(message, ...rest) {
        this.write('warn', message, rest);
    }
    debug(message, ...rest) {
        this.write('debug', message, rest);
    }
    verbose(message, ...rest) {
        this.write('verbose', message, rest);
    }
    fatal(message, ...rest) {
        this.write('fatal', message, rest);
    }
    write(nestLevel, message, rest) {
        const strings = rest.filter((r) => typeof r === 'string');
        const context = strings.length > 0 ? strings[strings.length - 1] : undefined;
        const level = nestLevel === 'log' && context && NEST_WIRING.has(context) ? 'debug' : nestLevel;
        const stack = level === 'error' || level === 'fatal' ? strings.slice(0, -1)[0] : undefined;
        const fields = { context, ...(stack ? { stack } : {}) };
        if (message instanceof Error) {
            this.logger[NEST_TO_PINO[level]]({ ...fields, err: message }, message.message);
        }
        else if (typeof message === 'object' && message !== null) {
            this.logger[NEST_TO_PINO[level]]({ ...fields, ...message });
        }
        else {
            this.logger[NEST_TO_PINO[level]](fields, String(message));
        }
    }
}
exports.NestPinoLogger = NestPinoLogger;
//# sourceMappingURL=logging.js.map