import type { NestExpressApplication } from '@nestjs/platform-express';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { EVENT_STORE, EventStore } from '../../src/event-store/event-store.port';
import { openEventStore } from '../../src/stores/stores.module';
import type { RecordKindDefinition } from '../../src/kinds/record-kind-definition';
import { RECORD_KINDS } from '../../src/read-models';
import { REGISTERED_KINDS } from '../../src/record-kinds';
import { startChildService } from './child-service';
import { liveStoreEnv, RUN_SUFFIX, TEST_WORKERS } from './stores';

/** Two accounts with one token each, and a second token for account A. */
export const TOKENS = { a: 'token-a', a2: 'token-a-second', b: 'token-b' } as const;
/** The accounts' ids: `account-a` and `account-b`, made unique per test file on live stores (see stores.ts). */
export const ACCOUNT_IDS = { a: `account-a${RUN_SUFFIX}`, b: `account-b${RUN_SUFFIX}` } as const;
export const ACCOUNTS = new Map([
  [TOKENS.a, ACCOUNT_IDS.a],
  [TOKENS.a2, ACCOUNT_IDS.a],
  [TOKENS.b, ACCOUNT_IDS.b],
]);

export interface TestApp {
  /** The Nest app, in-process only: with TEST_WORKERS it throws (suites needing it use describeUnlessWorkers). */
  app: NestExpressApplication;
  /** The event store the service writes to: the app's own in-process, else one opened beside the service, as the CLI does. */
  events: EventStore;
  /** supertest against the real listening socket. */
  http: TestAgent;
  baseUrl: string;
  dataDir: string;
  /** What the service has logged so far, at its LOG_LEVEL (error unless the suite's env says). */
  output(): string;
  /** Closes the app; keeps the data directory unless told to remove it. */
  close(options?: { keepData?: boolean }): Promise<void>;
}

/** The values found in some file of the directory, as `file: value`: what a copy of the data directory would give away. */
export function filesContaining(dataDir: string, values: string[]): string[] {
  const found: string[] = [];
  for (const file of readdirSync(dataDir)) {
    const bytes = readFileSync(join(dataDir, file));
    for (const value of values) {
      if (bytes.includes(Buffer.from(value))) found.push(`${file}: ${value}`);
    }
  }
  return found;
}

export function makeDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'pcs-test-'));
}

/**
 * The real service on a real SQLite file in a temp dir (or on the live stores, TEST_STORES=live),
 * listening on an ephemeral port. `accounts`: token -> account id, ACCOUNTS unless given.
 * `extraKinds`: kinds of record defined by the tests, kept beside the service's own (in-process
 * only: the built service started for TEST_WORKERS knows its registered kinds alone).
 */
export async function startTestApp(
  options: { dataDir?: string; env?: NodeJS.ProcessEnv; accounts?: Map<string, string>; extraKinds?: RecordKindDefinition[] } = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? makeDataDir();
  const accounts = options.accounts ?? ACCOUNTS;
  if (TEST_WORKERS && options.extraKinds) throw new Error('extraKinds needs the app in-process: use describeUnlessWorkers');
  if (TEST_WORKERS) return startWorkers(dataDir, accounts, options.env);
  // The erasure log in the temp directory, which the test removes (by default it is beside DATA_DIR).
  const env = { DATA_DIR: dataDir, ERASURE_LOG: join(dataDir, 'erasures.ndjson'), LOG_LEVEL: 'error', ...liveStoreEnv(), ...options.env };
  const config = { ...loadConfig(env), accessTokens: accounts };
  // Kept for the suite, not printed (a store closed on purpose, say, logs an error): a passing run
  // prints the runner's report alone.
  let output = '';
  const kinds = [...REGISTERED_KINDS, ...(options.extraKinds ?? [])];
  const app = await createApp(config, { write: (line: string) => void (output += line) }, { kinds });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    app,
    events: app.get<EventStore>(EVENT_STORE),
    http: request(baseUrl),
    baseUrl,
    dataDir,
    output: () => output,
    async close({ keepData = false } = {}) {
      await app.close();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * startTestApp with TEST_WORKERS=N: `node dist/main.js` with WORKERS=N, ready once every worker
 * listens. Closing it stops it with SIGTERM and fails when it did not exit 0 or a worker died
 * on the way (the primary would have replaced it silently).
 */
async function startWorkers(dataDir: string, accounts: Map<string, string>, env: NodeJS.ProcessEnv = {}): Promise<TestApp> {
  const service = await startChildService(dataDir, {
    // warn: each worker still says where it listens, and nothing per request fills the output.
    LOG_LEVEL: 'warn',
    ...env,
    ACCESS_TOKENS: [...accounts].map(([token, account]) => `${token}:${account}`).join(','),
  });
  const events = await openEventStore(loadConfig({ DATA_DIR: dataDir, ...liveStoreEnv(), ...env }), RECORD_KINDS);
  return {
    get app(): never {
      throw new Error(`TEST_WORKERS=${TEST_WORKERS}: the app runs in other processes; this suite needs describeUnlessWorkers`);
    },
    events,
    http: request(service.url),
    baseUrl: service.url,
    dataDir,
    output: service.output,
    async close({ keepData = false } = {}) {
      await events.close();
      service.process.kill('SIGTERM');
      const code = await service.exited;
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
      const died = service.output().match(/Worker \d+ died.*/g);
      if (code !== 0 || died) throw new Error(`the service ${died ? `lost a worker (${died.join('; ')})` : `exited ${code}`}:\n${service.output()}`);
    },
  };
}

/** `/v1/<path>` with the access token in the query, as clients send it. */
export const withToken = (path: string, token: string = TOKENS.a) => `/v1/${path}${path.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(token)}`;

export const JSON_CT = 'application/json; charset=UTF-8';

/** A fresh app for the enclosing describe (the whole file at top level), closed after it. */
export function freshApp(): () => TestApp {
  let app: TestApp;
  beforeAll(async () => (app = await startTestApp()));
  afterAll(() => app.close());
  return () => app;
}

/** Query parameters of a list request. */
export type Query = Record<string, string | number>;

/** `path` with the query appended, URL-encoded. */
export const withQuery = (path: string, query: Query) => {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return search ? `${path}?${search}` : path;
};
