// What logs and metrics cost a request: throughput of one read at LOG_LEVEL=warn (no request lines)
// and info (a JSON line per request), and how long a /metrics scrape takes.
// `npm run bench -- operations [seconds]`. Figures go to stderr; stdout takes the service's log.
import autocannon from 'autocannon';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config/config';

const TOKEN = 'bench-token';
const report = (line: string) => process.stderr.write(`${line}\n`);

export async function main(args: string[]): Promise<void> {
  const seconds = Number(args[0] ?? 10);
  for (const level of ['warn', 'info']) {
    const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-'));
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: level, RATE_LIMIT_REQUESTS: '0' });
    const app = await createApp({ ...config, accessTokens: new Map([[TOKEN, 'bench']]) });
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    try {
      const created = await fetch(`${base}/v1/customers?access_token=${TOKEN}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'Bench', email: 'bench@example.com' }),
      });
      const id = ((await created.json()) as { data: { Customer: { id: string } } }).data.Customer.id;
      const result = await autocannon({ url: `${base}/v1/customers/${id}?access_token=${TOKEN}`, connections: 10, duration: seconds });
      report(
        `GET /v1/customers/:id, LOG_LEVEL=${level}: ${result.requests.average.toFixed(0)} req/s, ` +
          `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}`,
      );
      const scrapes = 50;
      const started = process.hrtime.bigint();
      for (let i = 0; i < scrapes; i++) await (await fetch(`${base}/metrics`)).text();
      report(`GET /metrics: ${(Number(process.hrtime.bigint() - started) / 1e6 / scrapes).toFixed(2)} ms per scrape`);
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
