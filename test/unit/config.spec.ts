import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseAccessTokens, resolveAccessTokens } from '../../src/config/config';
import { makeDataDir } from '../support/test-app';

describe('configuration', () => {
  it('has defaults a newcomer can run with', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, host: undefined, logLevel: 'info', rateLimitRequests: 6000, rateLimitWindowSeconds: 60 });
    expect(config.sqliteFile).toBe(join(config.dataDir, 'service.sqlite'));
  });

  it('keeps 10,000 folded records per kind and 10,000 data keys unless told (the caches docs/operators.md, Memory, bounds)', () => {
    expect(loadConfig({})).toMatchObject({ recordCacheSize: 10_000, keyCacheSize: 10_000 });
    expect(loadConfig({ RECORD_CACHE_SIZE: '2000', KEY_CACHE_SIZE: '3000' })).toMatchObject({ recordCacheSize: 2000, keyCacheSize: 3000 });
  });

  it("finds 2,000,000 documents per read model by rowid in a rebuild unless told (operators.md's rebuild settings)", () => {
    expect(loadConfig({}).rebuildRowids).toBe(2_000_000);
    expect(loadConfig({ REBUILD_ROWIDS: '250000' }).rebuildRowids).toBe(250_000);
  });

  it("caps the feed's open streams at 16 per token and 64 per account unless told, at most an eighth of MAX_CONNECTIONS", () => {
    expect(loadConfig({})).toMatchObject({ maxConnections: 2000, feedStreamsPerToken: 16, feedStreamsPerAccount: 64 });
    expect(loadConfig({ MAX_CONNECTIONS: '100' })).toMatchObject({ feedStreamsPerToken: 12, feedStreamsPerAccount: 12 });
    expect(loadConfig({ MAX_CONNECTIONS: '4' })).toMatchObject({ feedStreamsPerToken: 1, feedStreamsPerAccount: 1 });
    expect(loadConfig({ FEED_STREAMS_PER_TOKEN: '4', FEED_STREAMS_PER_ACCOUNT: '200' })).toMatchObject({ feedStreamsPerToken: 4, feedStreamsPerAccount: 200 });
    expect(() => loadConfig({ FEED_STREAMS_PER_TOKEN: '0' })).toThrow(/FEED_STREAMS_PER_TOKEN must be an integer from 1 to 1000000; got "0"/);
  });

  it('parks poison events unless told to stop on them', () => {
    expect(loadConfig({}).poisonEvents).toBe('park');
    expect(loadConfig({ POISON_EVENTS: 'stop' }).poisonEvents).toBe('stop');
    expect(() => loadConfig({ POISON_EVENTS: 'skip' })).toThrow(/POISON_EVENTS must be park or stop; got "skip"/);
  });

  it.each([
    [{ PORT: 'abc' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ RATE_LIMIT_REQUESTS: '-1' }, /RATE_LIMIT_REQUESTS/],
    [{ RATE_LIMIT_WINDOW_SECONDS: '0' }, /RATE_LIMIT_WINDOW_SECONDS/],
    [{ CORS_ORIGINS: 'app.example.com' }, /CORS_ORIGINS entries must be origins like https:\/\/app\.example\.com .*got "app\.example\.com"/],
    [{ CORS_ORIGINS: 'https://app.example.com/' }, /CORS_ORIGINS .*got "https:\/\/app\.example\.com\/"/],
    [{ CORS_ORIGINS: 'ftp://files.example.com' }, /CORS_ORIGINS/],
    [{ CORS_ORIGINS: '*,https://app.example.com' }, /CORS_ORIGINS is either \* or a list of origins/],
    [{ WORKERS: '0' }, /WORKERS must be auto or an integer from 1 to 64; got "0"/],
    [{ WORKERS: 'many' }, /WORKERS must be auto or an integer from 1 to 64; got "many"/],
    [{ WORKERS: '65' }, /WORKERS/],
    [{ PROJECTION_LEASE_MS: '500' }, /PROJECTION_LEASE_MS must be an integer from 1000/],
    [{ RECORD_CACHE_SIZE: '0' }, /RECORD_CACHE_SIZE must be an integer from 1 to 1000000; got "0"/],
    [{ RECORD_CACHE_SIZE: '10000000' }, /RECORD_CACHE_SIZE must be an integer from 1 to 1000000; got "10000000"/],
    [{ KEY_CACHE_SIZE: 'small' }, /KEY_CACHE_SIZE must be an integer from 64 to 1000000/],
    [{ KEY_CACHE_SIZE: '10' }, /KEY_CACHE_SIZE must be an integer from 64 to 1000000; got "10"/],
    [{ REBUILD_ROWIDS: '-1' }, /REBUILD_ROWIDS must be an integer from 0/],
  ])('refuses %j with a clear message', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('runs one worker unless WORKERS asks for more, or auto for one per core', () => {
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ WORKERS: 'auto' }).workers).toBe(availableParallelism());
    expect(loadConfig({}).projectionLeaseMs).toBe(5000);
  });

  it('names each loaded configuration as an instance of its own on this host and process', () => {
    const [one, two] = [loadConfig({}).instanceId, loadConfig({}).instanceId];
    expect(one.split(':').slice(0, 2)).toEqual([hostname(), String(process.pid)]);
    expect(one).not.toBe(two);
  });

  it('allows no CORS origin unless CORS_ORIGINS lists some, or * for any', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: ' https://app.example.com, http://localhost:5173 ' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
  });

  it('uses the embedded stores unless a production store is configured, each on its own', () => {
    expect(loadConfig({})).toMatchObject({ eventStoreConnectionString: undefined, mongodb: undefined, storeTimeoutMs: 5000, eventStoreSilenceMs: 10_000 });
    expect(loadConfig({ EVENTSTORE_SILENCE_MS: '2500' }).eventStoreSilenceMs).toBe(2500);
    expect(loadConfig({ EVENTSTORE_CONNECTION_STRING: 'esdb://localhost:2113?tls=false' })).toMatchObject({
      eventStoreConnectionString: 'esdb://localhost:2113?tls=false',
      mongodb: undefined,
    });
    expect(loadConfig({ MONGODB_URI: 'mongodb://a:27017,b:27017/?replicaSet=rs', MONGODB_DATABASE: 'pcs' })).toMatchObject({
      eventStoreConnectionString: undefined,
      mongodb: { uri: 'mongodb://a:27017,b:27017/?replicaSet=rs', database: 'pcs' },
    });
    expect(loadConfig({ MONGODB_URI: 'mongodb+srv://c.example.net', STORE_TIMEOUT_MS: '250' })).toMatchObject({
      mongodb: { database: 'profiles_customers' },
      storeTimeoutMs: 250,
    });
    expect(loadConfig({ EVENTSTORE_CONNECTION_STRING: 'esdb+discover://a:2113,b:2113' }).eventStoreConnectionString).toBeDefined();
  });

  it.each([
    [{ EVENTSTORE_CONNECTION_STRING: 'http://user:s3cret@localhost:2113' }, /EVENTSTORE_CONNECTION_STRING must start with esdb:\/\/ or esdb\+discover:\/\//],
    [{ EVENTSTORE_CONNECTION_STRING: 'localhost:2113' }, /EVENTSTORE_CONNECTION_STRING/],
    [{ MONGODB_URI: 'postgres://user:s3cret@db' }, /MONGODB_URI must start with mongodb:\/\/ or mongodb\+srv:\/\//],
    [{ MONGODB_URI: 'mongodb://db', MONGODB_DATABASE: 'a.b' }, /MONGODB_DATABASE/],
    [{ STORE_TIMEOUT_MS: '10' }, /STORE_TIMEOUT_MS must be an integer from 100/],
    [{ EVENTSTORE_SILENCE_MS: '0' }, /EVENTSTORE_SILENCE_MS must be an integer from 100/],
  ])('refuses store settings %j without echoing secrets', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
    expect(() => loadConfig(env)).not.toThrow(/s3cret/);
  });

  it('parses token:account pairs', () => {
    expect(parseAccessTokens('t1:acc1, t2:acc2')).toEqual(
      new Map([
        ['t1', 'acc1'],
        ['t2', 'acc2'],
      ]),
    );
  });

  it('refuses a malformed pair without echoing the token', () => {
    expect(() => parseAccessTokens('good:acc,secret-token')).toThrow(/entry 2/);
    expect(() => parseAccessTokens('good:acc,secret-token')).not.toThrow(/secret-token/);
  });

  it('makes one token on first start, keeps it private, and reuses it', () => {
    const dir = makeDataDir();
    try {
      const first = resolveAccessTokens({}, dir);
      expect(first.created).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(first.tokens.get(first.created!)).toBe('default');
      const file = join(dir, 'access-token');
      expect(statSync(file).mode & 0o077).toBe(0);
      expect(readFileSync(file, 'utf8')).toContain(first.created);
      const second = resolveAccessTokens({}, dir);
      expect(second.created).toBeUndefined();
      expect(second.tokens).toEqual(first.tokens);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses ACCESS_TOKENS when set and writes no token file', () => {
    const dir = makeDataDir();
    try {
      expect(resolveAccessTokens({ ACCESS_TOKENS: 'tok:acc' }, dir).tokens).toEqual(new Map([['tok', 'acc']]));
      expect(existsSync(join(dir, 'access-token'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
