import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { newInstanceId } from '../instance';
import { ConfigError } from './config-error';
import { memoryLimit, memoryPlan, type MemoryPlan } from './memory';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface AppConfig {
  port: number;
  /** Undefined: every interface, as Node does by default. */
  host?: string;
  dataDir: string;
  /** The embedded default's single file: events and read models. */
  sqliteFile: string;
  /**
   * The erasure log (ERASURE_LOG): every erasure asked, kept outside DATA_DIR and its backups, so
   * that a restore applies again the erasures made after its backup was taken (key-store/erasure-log.ts).
   */
  erasureLog: string;
  logLevel: LogLevel;
  /** token -> account id */
  accessTokens: Map<string, string>;
  /** How long a write waits for its read models before answering 503. */
  readYourWritesTimeoutMs: number;
  /** Set: events go to EventStoreDB instead of the SQLite file. */
  eventStoreConnectionString?: string;
  /** Set: read models go to MongoDB instead of the SQLite file. */
  mongodb?: { uri: string; database: string };
  /** How long one call to EventStoreDB or MongoDB may wait for its server, at start-up and after. */
  storeTimeoutMs: number;
  /** How long an EventStoreDB subscription may hear nothing before the head is read to see whether it is stuck. */
  eventStoreSilenceMs: number;
  /** Requests each access token may make per window; 0 turns the limit off. */
  rateLimitRequests: number;
  rateLimitWindowSeconds: number;
  /** Failed authentications per client address and window; 0 turns the bound off. */
  rateLimitAuthFailures: number;
  /** The HTTP server's limits (see http/http-server.ts). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** GET /health/ready answers 503 while a read model is more than this many events behind. */
  readyMaxLagEvents: number;
  /** Browser origins allowed to call the service (CORS); empty: none, `['*']`: any. */
  corsOrigins: string[];
  /** Worker processes serving the one port (WORKERS; `auto`: one per core). */
  workers: number;
  /** How long a projection lease lasts unrenewed: another instance folds within 4/3 of it after the holder dies. */
  projectionLeaseMs: number;
  /** Names this instance in /metrics and as a lease holder (see newInstanceId). */
  instanceId: string;
  /** How often an idle event stream of the change feed sends a comment. */
  feedHeartbeatMs: number;
  /** The change feed's event streams and long-polls each access token, and each account, may hold open at once. */
  feedStreamsPerToken: number;
  feedStreamsPerAccount: number;
  /** Folded records the writer keeps per record kind (RecordWriter): a write to one of them reads only the events after it. */
  recordCacheSize: number;
  /** Records' data keys kept (DataKeys): a read or write of one goes to no key store. */
  keyCacheSize: number;
  /**
   * Documents per read model a rebuild on SQLite finds by rowid, through a table in memory (about 50
   * bytes each), before it builds the id index and finds the rest through that, more slowly.
   */
  rebuildRowids: number;
  /**
   * What a projector does with an event it cannot fold (POISON_EVENTS): `park` it and every later
   * event of its stream, and go on with the others (the default), or `stop` the read model.
   */
  poisonEvents: PoisonEvents;
  /** The memory limit and what was sized from it (config/memory.ts): the caches above take it unless set. */
  memory: MemoryPlan;
}

export type PoisonEvents = 'park' | 'stop';
const POISON_EVENTS: PoisonEvents[] = ['park', 'stop'];

export const APP_CONFIG = Symbol('AppConfig');

export { ConfigError };

const LOG_LEVELS: LogLevel[] = ['error', 'warn', 'info', 'debug'];
export const TOKEN_FILE = 'access-token';

/** Reads and checks the environment. Access tokens are not resolved here: see resolveAccessTokens. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Omit<AppConfig, 'accessTokens'> {
  const dataDir = resolve(env.DATA_DIR || './data');
  const logLevel = (env.LOG_LEVEL || 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; got "${env.LOG_LEVEL}"`);
  }
  const poisonEvents = (env.POISON_EVENTS || 'park').toLowerCase() as PoisonEvents;
  if (!POISON_EVENTS.includes(poisonEvents)) {
    throw new ConfigError(`POISON_EVENTS must be park or stop; got "${env.POISON_EVENTS}"`);
  }
  const maxConnections = integer(env, 'MAX_CONNECTIONS', 2000, 1, 1_000_000);
  // Far below the connections: a token, or an account, holding its most leaves the rest to the others.
  const workerCount = workers(env);
  const memory = memoryPlan(memoryLimit(env), workerCount);
  const feedStreamsPerAccount = integer(env, 'FEED_STREAMS_PER_ACCOUNT', Math.min(64, Math.max(1, Math.floor(maxConnections / 8))), 1, 1_000_000);
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || undefined,
    dataDir,
    sqliteFile: join(dataDir, 'service.sqlite'),
    // Beside DATA_DIR, not in it: it must outlive the directory a restore replaces.
    erasureLog: resolve(env.ERASURE_LOG || `${dataDir}-erasures.ndjson`),
    logLevel,
    readYourWritesTimeoutMs: integer(env, 'READ_YOUR_WRITES_TIMEOUT_MS', 5000, 1, 600_000),
    eventStoreConnectionString: connectionString(env, 'EVENTSTORE_CONNECTION_STRING', ['esdb:', 'esdb+discover:']),
    mongodb: mongodbSettings(env),
    storeTimeoutMs: integer(env, 'STORE_TIMEOUT_MS', 5000, 100, 600_000),
    eventStoreSilenceMs: integer(env, 'EVENTSTORE_SILENCE_MS', 10_000, 100, 600_000),
    rateLimitRequests: integer(env, 'RATE_LIMIT_REQUESTS', 6000, 0, 1_000_000),
    rateLimitWindowSeconds: integer(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    rateLimitAuthFailures: integer(env, 'RATE_LIMIT_AUTH_FAILURES', 30, 0, 1_000_000),
    headersTimeoutMs: integer(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
    requestTimeoutMs: integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConnections,
    readyMaxLagEvents: integer(env, 'READY_MAX_LAG_EVENTS', 1000, 0, 1_000_000_000),
    corsOrigins: corsOrigins(env),
    workers: workerCount,
    projectionLeaseMs: integer(env, 'PROJECTION_LEASE_MS', 5000, 1000, 600_000),
    instanceId: newInstanceId(),
    feedHeartbeatMs: integer(env, 'FEED_HEARTBEAT_MS', 10_000, 100, 15_000),
    feedStreamsPerToken: integer(env, 'FEED_STREAMS_PER_TOKEN', Math.min(16, feedStreamsPerAccount), 1, 1_000_000),
    feedStreamsPerAccount,
    // An LRU cache takes the room for all its entries when it is made (about 30 bytes each): bounded
    // so that a setting cannot take the heap before the first request.
    recordCacheSize: integer(env, 'RECORD_CACHE_SIZE', memory.server.recordCacheSize, 1, 1_000_000),
    keyCacheSize: integer(env, 'KEY_CACHE_SIZE', memory.server.keyCacheSize, 64, 1_000_000),
    rebuildRowids: integer(env, 'REBUILD_ROWIDS', memory.server.rebuildRowids, 0, 100_000_000),
    poisonEvents,
    memory,
  };
}

/** WORKERS: a number of processes, or `auto` for one per core. */
function workers(env: NodeJS.ProcessEnv): number {
  const raw = env.WORKERS?.trim() ?? '';
  if (raw === '') return 1;
  if (raw.toLowerCase() === 'auto') return availableParallelism();
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64) {
    throw new ConfigError(`WORKERS must be auto or an integer from 1 to 64; got "${raw}"`);
  }
  return Number(raw);
}

/** CORS_ORIGINS: origins separated by commas (`https://app.example.com`), or `*` for any. */
function corsOrigins(env: NodeJS.ProcessEnv): string[] {
  const origins = (env.CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  if (origins.includes('*')) {
    if (origins.length > 1) throw new ConfigError('CORS_ORIGINS is either * or a list of origins, not both');
    return origins;
  }
  for (const origin of origins) {
    // What a browser sends in Origin: scheme, host and port only, no path and no trailing slash.
    const url = URL.canParse(origin) ? new URL(origin) : null;
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
      throw new ConfigError(`CORS_ORIGINS entries must be origins like https://app.example.com (scheme, host, port; no path); got "${origin}"`);
    }
  }
  return origins;
}

/** A URL-like setting with one of the given schemes, or undefined when unset. Never echoed: it may hold a password. */
function connectionString(env: NodeJS.ProcessEnv, name: string, schemes: string[]): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  // Only the scheme is checked here (multi-host strings are not WHATWG URLs); the driver parses the rest at start-up.
  const scheme = /^([a-z+]+:)\/\/./i.exec(raw)?.[1].toLowerCase();
  if (!scheme || !schemes.includes(scheme)) {
    throw new ConfigError(`${name} must start with ${schemes.map((s) => `${s}//`).join(' or ')}`);
  }
  return raw;
}

const MONGODB_DATABASE = /^[A-Za-z0-9_-]{1,63}$/;

function mongodbSettings(env: NodeJS.ProcessEnv): AppConfig['mongodb'] {
  const uri = connectionString(env, 'MONGODB_URI', ['mongodb:', 'mongodb+srv:']);
  const database = env.MONGODB_DATABASE || 'profiles_customers';
  if (!MONGODB_DATABASE.test(database)) {
    throw new ConfigError(`MONGODB_DATABASE must be 1 to 63 letters, digits, "_" or "-"; got "${database}"`);
  }
  return uri ? { uri, database } : undefined;
}

/** `token:accountId` pairs separated by commas. */
export function parseAccessTokens(value: string): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const pair of value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const colon = pair.lastIndexOf(':');
    const token = pair.slice(0, colon);
    const accountId = pair.slice(colon + 1);
    // Never echo the token itself into an error: it may end up in a log.
    if (colon <= 0 || !accountId) {
      throw new ConfigError(`ACCESS_TOKENS entry ${tokens.size + 1} is not of the form token:accountId`);
    }
    if (tokens.has(token)) throw new ConfigError(`ACCESS_TOKENS entry ${tokens.size + 1} repeats a token`);
    tokens.set(token, accountId);
  }
  return tokens;
}

/**
 * The tokens from ACCESS_TOKENS; with none configured, the one kept in the data directory, made
 * on first start. `created` is the token when it was made just now, so it is shown only once.
 */
export function resolveAccessTokens(env: NodeJS.ProcessEnv, dataDir: string): { tokens: Map<string, string>; created?: string } {
  if (env.ACCESS_TOKENS?.trim()) {
    const tokens = parseAccessTokens(env.ACCESS_TOKENS);
    if (tokens.size === 0) throw new ConfigError('ACCESS_TOKENS has no token:accountId pair');
    return { tokens };
  }
  const file = join(dataDir, TOKEN_FILE);
  if (existsSync(file)) {
    return { tokens: parseAccessTokens(readFileSync(file, 'utf8')) };
  }
  const token = randomBytes(24).toString('base64url');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(file, `${token}:default\n`, { mode: 0o600, flag: 'wx' });
  return { tokens: new Map([[token, 'default']]), created: token };
}

/**
 * A limit kept in each process (connections, rate limits, the feed's open requests): with WORKERS=N
 * each worker allows its share, 1/N of the configured figure (rounded up). The primary deals
 * connections to the workers in turn, so the machine allows about that figure. Separate instances
 * each count their own (docs/operators.md).
 */
export function workerShare(limit: number, config: Pick<AppConfig, 'workers'>): number {
  return Math.ceil(limit / config.workers);
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}; got "${raw}"`);
  }
  return Number(raw);
}
