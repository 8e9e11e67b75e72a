"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ConfigError = exports.APP_CONFIG = void 0;
exports.loadConfig = loadConfig;
exports.parseAccessTokens = parseAccessTokens;
exports.resolveAccessTokens = resolveAccessTokens;
const node_crypto_1 = require("node:crypto");
const node_fs_1 = require("node:fs");
const node_os_1 = require("node:os");
const node_path_1 = require("node:path");
const instance_1 = require("../instance");
exports.APP_CONFIG = Symbol('AppConfig');
class ConfigError extends Error {
    constructor() {
        super(...arguments);
        this.name = 'ConfigError';
    }
}
exports.ConfigError = ConfigError;
const LOG_LEVELS = ['error', 'warn', 'info', 'debug'];
const TOKEN_FILE = 'access-token';
function loadConfig(env = process.env) {
    const dataDir = (0, node_path_1.resolve)(env.DATA_DIR || './data');
    const logLevel = (env.LOG_LEVEL || 'info').toLowerCase();
    if (!LOG_LEVELS.includes(logLevel)) {
        throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "${env.LOG_LEVEL}"`);
    }
    return {
        port: integer(env, 'PORT', 3000, 0, 65535),
        host: env.HOST || undefined,
        dataDir,
        sqliteFile: (0, node_path_1.join)(dataDir, 'service.sqlite'),
        logLevel,
        readYourWritesTimeoutMs: integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5000, 1, 600_000),
        eventStoreConnectionString: connectionString(env, 'EVENTSTORE_CONNECTION_STRING', ['esdb:', 'esdb+discover:']),
        mongodb: mongodbSettings(env),
        storeTimeoutMs: integer(env, 'STORE_TIMEOUT_MS', 5000, 100, 600_000),
        rateLimitRequests: integer(env, 'RATE_LIMIT_REQUESTS', 6000, 0, 1_000_000),
        rateLimitWindowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
        rateLimitAuthFailures: integer(env, 'RATE_LIMIT_AUTH_FAILURES', 30, 0, 1_000_000),
        headersTimeoutMs: integer(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
        requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
        keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
        maxConnections: integer(env, 'MAX_CONNECTIONS', 1000, 1, 1_000_000),
        readyMaxLagEvents: integer(env, 'READY_MAX_LAG_EVENTS', 1000, 0, 1_000_000_000),
        corsOrigins: corsOrigins(env),
        workers: workers(env),
        projectionLeaseMs: integer(env, 'PROJECTION_LEASE_MS', 5000, 1000, 600_000),
        instanceId: (0, instance_1.newInstanceId)(),
    };
}
function workers(env) {
    const raw = env.WORKERS?.trim() ?? '';
    if (raw === '')
        return 1;
    if (raw.toLowerCase() === 'auto')
        return (0, node_os_1.availableParallelism)();
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64) {
        throw new ConfigError(`WORKERS must be auto or an integer from 1 to 64; got "${raw}"`);
    }
    return Number(raw);
}
function corsOrigins(env) {
    const origins = (env.CORS_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean);
    if (origins.includes('*')) {
        if (origins.length > 1)
            throw new ConfigError('CORS_ORIGINS is either * or a list of origins, not both');
        return origins;
    }
    for (const origin of origins) {
        const url = URL.canParse(origin) ? new URL(origin) : null;
        if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
            throw new ConfigError(`CORS_ORIGINS entries must be origins like https://app.example.com (scheme, host, port; no path); got "${origin}"`);
        }
    }
    return origins;
}
function connectionString(env, name, schemes) {
    const raw = env[name]?.trim();
    if (!raw)
        return undefined;
    const scheme = /^([a-z+]+:)\/\/./i.exec(raw)?.[1].toLowerCase();
    if (!scheme || !schemes.includes(scheme)) {
        throw new ConfigError(`${name} must start with ${schemes.map((s) => `${s}//`).join(' or ')}`);
    }
    return raw;
}
const MONGODB_DATABASE = /^[A-Za-z0-9_-]{1,63}$/;
function mongodbSettings(env) {
    const uri = connectionString(env, 'MONGODB_URI', ['mongodb:', 'mongodb+srv:']);
    const database = env.MONGODB_DATABASE || 'profiles_customers';
    if (!MONGODB_DATABASE.test(database)) {
        throw new ConfigError(`MONGODB_DATABASE must be 1 to 63 letters, digits, "_" or "-"; got "${database}"`);
    }
    return uri ? { uri, database } : undefined;
}
function parseAccessTokens(value) {
    const tokens = new Map();
    for (const pair of value.split(',').map((p) => p.trim()).filter(Boolean)) {
        const colon = pair.lastIndexOf(':');
        const token = pair.slice(0, colon);
        const accountId = pair.slice(colon + 1);
        if (colon <= 0 || !accountId) {
            throw new ConfigError(`ACCESS_TOKENS entry ${tokens.size + 1} is not of the form token:accountId`);
        }
        if (tokens.has(token))
            throw new ConfigError(`ACCESS_TOKENS entry ${tokens.size + 1} repeats a token`);
        tokens.set(token, accountId);
    }
    return tokens;
}
function resolveAccessTokens(env, dataDir) {
    if (env.ACCESS_TOKENS?.trim()) {
        const tokens = parseAccessTokens(env.ACCESS_TOKENS);
        if (tokens.size === 0)
            throw new ConfigError('ACCESS_TOKENS has no token:accountId pair');
        return { tokens };
    }
    const file = (0, node_path_1.join)(dataDir, TOKEN_FILE);
    if ((0, node_fs_1.existsSync)(file)) {
        return { tokens: parseAccessTokens((0, node_fs_1.readFileSync)(file, 'utf8')) };
    }
    const token = (0, node_crypto_1.randomBytes)(24).toString('base64url');
    (0, node_fs_1.mkdirSync)(dataDir, { recursive: true, mode: 0o700 });
    (0, node_fs_1.writeFileSync)(file, `${token}:default\n`, { mode: 0o600, flag: 'wx' });
    return { tokens: new Map([[token, 'default']]), created: token };
}
function integer(env, name, fallback, min, max) {
    const raw = env[name];
    if (raw === undefined || raw === '')
        return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
        throw new ConfigError(`${name} must be an integer from ${min} to ${max}; got "${raw}"`);
    }
    return Number(raw);
}
//# sourceMappingURL=config.js.map