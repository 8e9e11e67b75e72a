// `npm run bench -- tracing [--duration S] [--rounds N] [--connections N]`
// What traces cost (issue 38): the create and read routes on three services side by side, each the
// built service at WORKERS=1 on a fresh data directory of its own: two without any OTEL_* variable
// (tracing off: the second one, measured after the traced one, shows the run's noise) and one
// exporting every span over OTLP/HTTP (the default protocol, http/protobuf, and the SDK's default
// batching) to a receiver in this process that reads and discards them. The rows take turns, in
// a different order each round, and every figure is a ratio to the first untraced service measured
// in the same round, so the machine's drift cancels out. CPU time per request (from /proc) is the
// steadier figure on a shared machine: the load others put on it moves req/s far more.
// Then the cost of what stays in the code with tracing off: `inSpan` around a call, in this process.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { inSpan } from '../src/tracing/tracing';
import type { LoadResult, LoadSpec } from './load-worker';
import { generatorName } from './load-worker';
import { cpuTicks, numberArg } from './measure';
import { load, Service, startService, stopService } from './service';

const TOKEN = 'bench-token';
const ACCOUNT = 'account-0';
const SEEDED = 200;
const WARM_UP_SECONDS = 2;

type Setting = 'off' | 'on' | 'on, 1 in 10 sampled' | 'off again';
const SETTINGS: Setting[] = ['off', 'on', 'on, 1 in 10 sampled', 'off again'];
/** The settings of each traced service, beside the endpoint. */
const TRACED: Partial<Record<Setting, Record<string, string>>> = {
  on: {},
  'on, 1 in 10 sampled': { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
};

interface Row {
  name: string;
  spec: (ids: string[]) => Omit<LoadSpec, 'url' | 'token' | 'connections' | 'durationSeconds'>;
}
const ROWS: Row[] = [
  {
    name: 'customers: create',
    spec: () => ({ method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true }),
  },
  { name: 'customers: read', spec: (ids) => ({ method: 'GET', paths: ids.map((id) => `/v1/customers/${id}`) }) },
];

export async function main(args: string[]): Promise<void> {
  const durationSeconds = numberArg(args, '--duration', 5);
  const rounds = numberArg(args, '--rounds', 3);
  const connections = numberArg(args, '--connections', 32);
  console.log(
    `Tracing off and on: ${connections} connections, ${durationSeconds} s per row and setting, ${rounds} rounds (after ${WARM_UP_SECONDS} s of each load unmeasured), generator ${generatorName()} in a process of its own; each service at WORKERS=1.`,
  );

  const receiver = await startDiscardingReceiver();
  const services = new Map<Setting, Service & { dataDir: string; ids: string[] }>();
  try {
    for (const setting of SETTINGS) {
      const traced = TRACED[setting];
      const env: Record<string, string> = traced ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...traced } : {};
      const service = await startService(mkdtempSync(join(tmpdir(), 'pcs-bench-tracing-')), { workers: 1, accessTokens: `${TOKEN}:${ACCOUNT}`, env });
      if (Boolean(traced) !== service.output().includes('Exporting traces')) throw new Error(`the traced service does not export:\n${service.output()}`);
      services.set(setting, { ...service, ids: await createMany(service) });
    }
    const run = async (setting: Setting, row: Row, seconds: number) => {
      const service = services.get(setting)!;
      const cpuBefore = cpuSeconds(service.child.pid!);
      const result = await load({ ...row.spec(service.ids), url: service.url, token: TOKEN, connections, durationSeconds: seconds });
      if (result.failures > 0)
        throw new Error(`${row.name}, tracing ${setting}: ${result.failures} of ${result.requests} requests failed\n${service.output().slice(-2000)}`);
      const cpuAfter = cpuSeconds(service.child.pid!);
      return { ...result, cpuSeconds: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore };
    };
    for (const row of ROWS) for (const setting of SETTINGS) await run(setting, row, WARM_UP_SECONDS);
    const exportedBefore = { ...receiver.received };

    const results = new Map<string, (LoadResult & { cpuSeconds?: number })[]>();
    const key = (row: Row, setting: Setting) => `${row.name} ${setting}`;
    for (let round = 0; round < rounds; round++) {
      for (const row of ROWS) {
        // off first each round (the others are set against it), then on and off again in turn.
        const rest = SETTINGS.slice(1);
        const order: Setting[] = ['off', ...rest.slice(round % rest.length), ...rest.slice(0, round % rest.length)];
        for (const setting of order) results.set(key(row, setting), [...(results.get(key(row, setting)) ?? []), await run(setting, row, durationSeconds)]);
      }
    }

    const requests = receiver.received.requests - exportedBefore.requests;
    const bytes = receiver.received.bytes - exportedBefore.bytes;
    console.log(`\nThe traced services sent ${requests} OTLP requests, ${(bytes / 1e6).toFixed(1)} MB, over the measured rows.\n`);
    // Ratios as the median of the rounds', each round's beside it: one round that others' load hit stands out.
    const perRound = (ratios: number[]) => `${median(ratios).toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(', ')})`;
    console.log('| Route | tracing | req/s | p50 ms | p99 ms | CPU µs per request | req/s × off, median (rounds) | CPU per request × off, median (rounds) |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|');
    for (const row of ROWS) {
      const off = results.get(key(row, 'off'))!;
      for (const setting of SETTINGS) {
        const of = results.get(key(row, setting))!;
        const perRequest = of.map((r) => (r.cpuSeconds === undefined ? NaN : (r.cpuSeconds * 1e6) / r.requests));
        const offPerRequest = off.map((r) => (r.cpuSeconds === undefined ? NaN : (r.cpuSeconds * 1e6) / r.requests));
        const ratios = of.map((r, i) => r.requestsPerSecond / off[i].requestsPerSecond);
        const cpuRatios = perRequest.map((c, i) => c / offPerRequest[i]);
        console.log(
          `| ${row.name} | ${setting} | ${mean(of.map((r) => r.requestsPerSecond)).toFixed(0)} | ${mean(of.map((r) => r.p50)).toFixed(1)} | ${mean(of.map((r) => r.p99)).toFixed(1)} | ${mean(perRequest).toFixed(0)} | ${setting === 'off' ? '1' : perRound(ratios)} | ${setting === 'off' ? '1' : perRound(cpuRatios)} |`,
        );
      }
    }
  } finally {
    for (const service of services.values()) {
      await stopService(service);
      rmSync(service.dataDir, { recursive: true, force: true });
    }
    await receiver.close();
  }

  await offPathCost();
}

/**
 * What tracing off leaves in a request: each store call, command and query goes through `inSpan`,
 * which then tests a flag and calls the work. Timed here against the bare call, in this process
 * (where tracing is off too), over a million calls.
 */
async function offPathCost(): Promise<void> {
  const work = () => Promise.resolve(1);
  const time = async (f: () => Promise<number>) => {
    const started = performance.now();
    for (let i = 0; i < 1_000_000; i++) await f();
    return ((performance.now() - started) * 1e6) / 1_000_000;
  };
  // Taking turns, seven times each, the fastest kept: the first turns warm the code up, and the
  // machine's other work only ever adds time.
  const wrapped = () => inSpan('bench', () => ({ 'bench.attribute': 1 }), work);
  let bare = Infinity;
  let inside = Infinity;
  for (let i = 0; i < 7; i++) {
    bare = Math.min(bare, await time(work));
    inside = Math.min(inside, await time(wrapped));
  }
  console.log(
    `\nTracing off, \`inSpan\` around an awaited call: ${inside.toFixed(0)} ns against ${bare.toFixed(0)} ns bare, ${(inside - bare).toFixed(0)} ns more per call (fastest of seven million each; a create makes about 8 such calls).`,
  );
}

/** An OTLP/HTTP endpoint that reads every export, counts it and answers success. */
async function startDiscardingReceiver(): Promise<{ url: string; received: { requests: number; bytes: number }; close(): Promise<void> }> {
  const received = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received.bytes += chunk.length));
    req.on('end', () => {
      received.requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function createMany(service: Service): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < SEEDED; i++) {
    const text = await post(service, '/v1/customers', { name: `customer ${i}`, email: 'listed@example.com', company: 'Bench Co' });
    ids.push((JSON.parse(text) as { data: { Customer: { id: string } } }).data.Customer.id);
  }
  return ids;
}

function post(service: Service, path: string, body: unknown): Promise<string> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, service.url),
      { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': randomUUID(), 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => (res.statusCode === 201 ? resolve(text) : reject(new Error(`POST ${path}: ${res.statusCode} ${text}`))));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** CPU seconds (user and system) the process has used so far, from /proc (Linux); undefined elsewhere. */
function cpuSeconds(pid: number): number | undefined {
  try {
    return cpuTicks(pid) / 100;
  } catch {
    return undefined;
  }
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
