"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AccessTokens = exports.digest = void 0;
exports.tokenOf = tokenOf;
exports.accessTokenMiddleware = accessTokenMiddleware;
const node_crypto_1 = require("node:crypto");
const errors_1 = require("../errors");
const digest = (token) => (0, node_crypto_1.createHash)('sha256').update(token, 'utf8').digest();
exports.digest = digest;
class AccessTokens {
    constructor(tokens) {
        this.matched = new Map();
        this.entries = [...tokens].map(([token, accountId]) => {
            const hash = (0, exports.digest)(token);
            return { digest: hash, key: hash.toString('base64'), accountId };
        });
    }
    entryFor(token) {
        const known = this.matched.get(token);
        if (known)
            return known;
        const found = this.compare((0, exports.digest)(token));
        if (found)
            this.matched.set(token, found);
        return found;
    }
    compare(sent) {
        let found = null;
        for (const entry of this.entries) {
            if ((0, node_crypto_1.timingSafeEqual)(entry.digest, sent))
                found = entry;
        }
        return found;
    }
}
exports.AccessTokens = AccessTokens;
function tokenOf(req) {
    const fromQuery = req.query.access_token;
    if (fromQuery !== undefined)
        return fromQuery;
    const auth = req.headers.authorization;
    const bearer = auth?.match(/^Bearer\s+(\S+)\s*$/i);
    return bearer ? bearer[1] : auth === undefined ? undefined : '';
}
const rateLimited = (retryAfter, message) => new errors_1.ApiError('RATE_LIMITED', `${message} Retry after the number of seconds in Retry-After.`, undefined, retryAfter);
function accessTokenMiddleware(tokens, limits) {
    return (req, _res, next) => {
        const address = req.socket.remoteAddress ?? '';
        const failures = limits?.failedAuthPerAddress;
        const wait = failures?.blocked(address);
        if (failures && wait) {
            return next(rateLimited(wait, `Too many failed authentications from this address: at most ${failures.limit} per ${failures.windowMs / 1000} s.`));
        }
        const token = tokenOf(req);
        const entry = typeof token === 'string' && token !== '' ? tokens.entryFor(token) : null;
        if (!entry) {
            failures?.hit(address);
            const problem = token === '' && req.query.access_token === undefined
                ?
                    'the Authorization header must be "Bearer <access token>" (or send ?access_token=<access token>)'
                : token === undefined || token === ''
                    ? 'access_token is required'
                    : 'access_token is invalid';
            return next(new errors_1.ApiError('UNAUTHORIZED', problem));
        }
        if (limits) {
            const wait = limits.perToken.hit(entry.key);
            if (wait) {
                return next(rateLimited(wait, `Too many requests with this access token: at most ${limits.perToken.limit} per ${limits.perToken.windowMs / 1000} s.`));
            }
        }
        req.accountId = entry.accountId;
        next();
    };
}
//# sourceMappingURL=access-token.middleware.js.map