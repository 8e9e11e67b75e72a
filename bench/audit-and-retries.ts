// Latency of what issue 5 adds, next to the plain operations it extends: POST with a new and a
// replayed Idempotency-Key, history and as-of reads of a long stream. Sequential requests against
// the real app on a temp SQLite file. `npm run bench -- audit-and-retries [requests] [events]`.
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';

const TOKEN = 'bench-token';

export async function main(args: string[]): Promise<void> {
  const requests = Number(args[0] ?? 200);
  const events = Number(args[1] ?? 200);
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-'));
  const app = await createApp({
    ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'error', RATE_LIMIT_REQUESTS: '0' }),
    accessTokens: new Map([[TOKEN, 'bench']]),
  });
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/v1/customers`;
  const send = async (method: string, path: string, body?: object, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}${path.includes('?') ? '&' : '?'}access_token=${TOKEN}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body && JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  };
  const measure = async (label: string, request: (i: number) => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < requests; i++) {
      const start = performance.now();
      await request(i);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(times.length * q))].toFixed(1);
    console.log(`${label.padEnd(34)} median ${at(0.5)} ms   p95 ${at(0.95)} ms`);
  };
  try {
    await measure('POST, no key', (i) => send('POST', '', { email: `plain${i}@x.io` }));
    await measure('POST, new Idempotency-Key', (i) => send('POST', '', { email: `key${i}@x.io` }, { 'idempotency-key': `k${i}` }));
    await measure('POST, replayed Idempotency-Key', (i) => send('POST', '', { email: `key${i}@x.io` }, { 'idempotency-key': `k${i}` }));
    const id = (await send('POST', '', { email: 'long@x.io' })).data.Customer.id;
    for (let i = 0; i < events; i++) await send('PUT', `/${id}`, { name: `n${i}` });
    await measure('GET read (read model)', () => send('GET', `/${id}`));
    await measure(`GET ?as_of (${events + 1} events)`, () => send('GET', `/${id}?as_of=${Math.floor(Date.now() / 1000)}`));
    await measure(`GET history (${events + 1} events, 100)`, () => send('GET', `/${id}/history`));
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
