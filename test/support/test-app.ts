import type { NestExpressApplication } from '@nestjs/platform-express';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { liveStoreEnv, RUN_SUFFIX } from './stores';

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
  app: NestExpressApplication;
  /** supertest against the real listening socket. */
  http: TestAgent;
  baseUrl: string;
  dataDir: string;
  /** Closes the app; keeps the data directory unless told to remove it. */
  close(options?: { keepData?: boolean }): Promise<void>;
}

export function makeDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'pcs-test-'));
}

/**
 * The real service on a real SQLite file in a temp dir (or on the live stores, TEST_STORES=live),
 * listening on an ephemeral port. `accounts`: token -> account id, ACCOUNTS unless given.
 */
export async function startTestApp(
  options: { dataDir?: string; env?: NodeJS.ProcessEnv; accounts?: Map<string, string> } = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? makeDataDir();
  const env = { DATA_DIR: dataDir, LOG_LEVEL: 'error', ...liveStoreEnv(), ...options.env };
  const config = { ...loadConfig(env), accessTokens: options.accounts ?? ACCOUNTS };
  const app = await createApp(config);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    app,
    http: request(baseUrl),
    baseUrl,
    dataDir,
    async close({ keepData = false } = {}) {
      await app.close();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `/v1/<path>` with the access token in the query, as clients send it. */
export const withToken = (path: string, token: string = TOKENS.a) =>
  `/v1/${path}${path.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(token)}`;

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
