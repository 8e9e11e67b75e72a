// `npm run bench [-- http] [--scale] [--duration S] [--connections N] [--only <part of a row's name>] [--workers N,M] [--autocannon]`
// Starts the built service (dist/main.js) as users run it (logs at info into a file, metrics, rate
// limits on with a limit above the load) on a fresh data directory, once per WORKERS setting (1 and
// 2 unless told), loads each route over loopback (load-worker.ts: wrk, or autocannon without it)
// and prints req/s and p50/p99 latency per route and setting next to two floors: a bare NestJS +
// Express app in its own process answering a constant body of the same size (bench/floor.ts), and
// the conventional service (bench/conventional/: customers on NestJS + better-sqlite3 with the
// service's request features and no event sourcing), loaded the same way right after each row.
// Each row's CPU per request is given as a multiple of both floors'.
// Raw node:http, the limit, runs beside it, and so does the floor with Express's prototypes set once
// per process as the service sets them (what Express itself can do at best).
// With --scale it then seeds 1,000,000 customers over 100 accounts through the event store, folds
// them with the operators' rebuild, and measures the read and list rows again at that size.
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatorName, LoadResult, LoadSpec } from './load-worker';
import { cpuTicks, numberArg } from './measure';
import { rebuildAll } from './rebuild';
import { seedCustomers } from './seed';
import { listening, load, Service, startConventional, startService, stopService } from './service';

export const TOKEN = 'bench-token';
export const ACCOUNT = 'account-0';
/** Records made before the rows run, so reads, updates and lists have something to hit. */
const SEEDED = 200;
/** Every seeded record of a kind carries this e-mail: the filtered lists match all of them, show 10. */
export const LISTED_EMAIL = 'listed@example.com';

interface Options {
  scale: boolean;
  only?: string;
  durationSeconds: number;
  connections: number;
  /** The service's WORKERS settings, each run beside the others. */
  workers: number[];
  /** autocannon as the load generator even where wrk is installed. */
  autocannon: boolean;
}

interface Row {
  name: string;
  /** The most its CPU per request may be, as a multiple of the bare floor's in the same run. */
  target?: number;
  /** Reads and lists: a second worker should serve more of them (target: 1.5 times at WORKERS=2). */
  scales?: boolean;
  /** The load on the i-th service (each has its own record ids). */
  spec: (i: number) => Omit<LoadSpec, 'url' | 'token' | 'connections' | 'durationSeconds'>;
  /** The same load on the conventional service, where it has the route. */
  conventional?: () => Omit<LoadSpec, 'url' | 'token' | 'connections' | 'durationSeconds'>;
}

/** A row's result, by route and WORKERS setting. */
const rowKey = (name: string, workers: number) => `${name} @${workers}`;

/** The yardsticks each row is set against, each in its own process. */
interface Yardsticks {
  floor: Service;
  limit: Service;
  /** The floor with Express's prototypes set once, as the service sets them: what Express can do at best. */
  bornFloor: Service;
  /** The conventional service: a row's second floor, run right after it. */
  conventional?: Service;
}

export async function main(args: string[]): Promise<void> {
  const options: Options = {
    scale: args.includes('--scale'),
    durationSeconds: numberArg(args, '--duration', 10),
    connections: numberArg(args, '--connections', 32),
    workers: numberListArg(args, '--workers', [1, 2]),
    autocannon: args.includes('--autocannon'),
    only: args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined,
  };
  console.log(
    `Load: ${options.connections} connections, ${options.durationSeconds} s per row (after ${WARM_UP_SECONDS} s of each load unmeasured), generator ${generatorName(options.autocannon)} in a process of its own; service at WORKERS=${options.workers.join(' and ')}.`,
  );

  const small = await smallDataRun(options);
  if (options.scale) await scaleRun(options, small);
}

/**
 * The rows on fresh data directories, one service per WORKERS setting: create/read/list/update per
 * resource, the settings one after the other between two floor runs.
 */
async function smallDataRun(options: Options): Promise<Map<string, RowResult>> {
  const services: (Service & { dataDir: string })[] = [];
  let yardsticks: Yardsticks | undefined;
  try {
    // The same records (ids aside) in each service: the rows take their paths from the first.
    const ids: Record<'customers' | 'profiles', string[]>[] = [];
    for (const workers of options.workers) {
      const service = await startService(mkdtempSync(join(tmpdir(), 'pcs-bench-')), { workers, accessTokens: `${TOKEN}:${ACCOUNT}` });
      services.push(service);
      ids.push({
        customers: await createMany(service, 'customers', (i) => ({ name: `customer ${i}`, email: LISTED_EMAIL, company: 'Bench Co' })),
        profiles: await createMany(service, 'profiles', (i) => ({ name: `profile ${i}`, email: LISTED_EMAIL, site: 'https://bench.example.com' })),
      });
    }
    yardsticks = await startYardsticks((await call(services[0], 'GET', `/v1/customers/${ids[0].customers[0]}`)).text.length);
    const conventional = await startConventional(mkdtempSync(join(tmpdir(), 'pcs-bench-conventional-')), `${TOKEN}:${ACCOUNT}`);
    yardsticks.conventional = conventional;
    const conventionalIds = await createMany(conventional, 'customers', (i) => ({ name: `customer ${i}`, email: LISTED_EMAIL, company: 'Bench Co' }));
    const conventionalItems = conventionalIds.map((id) => `/v1/customers/${id}`);
    const rows: Row[] = [];
    for (const resource of ['customers', 'profiles'] as const) {
      const body: Record<string, string> = resource === 'customers' ? { email: 'new@example.com', company: 'Bench Co' } : { email: 'new@example.com' };
      const items = (i: number) => ids[i][resource].map((id) => `/v1/${resource}/${id}`);
      // The conventional service has customers only: the profiles' rows are set against its customers' too.
      const list = (path: string) => ({ method: 'GET' as const, paths: [`${path}?email=${LISTED_EMAIL}&limit=10`] });
      rows.push(
        {
          name: `${resource}: create`,
          target: 4.5,
          spec: () => ({ method: 'POST', paths: [`/v1/${resource}`], body, rename: true }),
          conventional: () => ({ method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true }),
        },
        {
          name: `${resource}: read`,
          target: 1.9,
          scales: true,
          spec: (i) => ({ method: 'GET', paths: items(i) }),
          conventional: () => ({ method: 'GET', paths: conventionalItems }),
        },
        {
          name: `${resource}: list, email filter, limit 10`,
          target: 2.5,
          scales: true,
          spec: () => list(`/v1/${resource}`),
          conventional: () => list('/v1/customers'),
        },
        {
          name: `${resource}: update`,
          target: 4.0,
          spec: (i) => ({ method: 'PUT', paths: items(i), body: {}, rename: true }),
          conventional: () => ({ method: 'PUT', paths: conventionalItems, body: {}, rename: true }),
        },
      );
    }
    // The change feed's first page (issue 35): beside the lists of the same size.
    rows.push({ name: 'events: feed page, limit 10', scales: true, spec: () => ({ method: 'GET', paths: ['/v1/events?limit=10'] }) });
    const results = await runRows(
      services,
      yardsticks,
      rows.filter((r) => !options.only || r.name.includes(options.only)),
      options,
    );
    printTable(`Small data (${SEEDED} customers and ${SEEDED} profiles, plus what the create rows add)`, rows, results, options);
    return results;
  } finally {
    for (const service of services) {
      await stopService(service);
      rmSync(service.dataDir, { recursive: true, force: true });
    }
    if (yardsticks) await stopYardsticks(yardsticks);
  }
}

async function stopYardsticks(yardsticks: Yardsticks): Promise<void> {
  await Promise.all(Object.values(yardsticks).map(stopService));
  const dataDir = (yardsticks.conventional as { dataDir?: string } | undefined)?.dataDir;
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}

/** 1,000,000 customers over 100 accounts, seeded through the event store and folded by a projection rebuild. */
async function scaleRun(options: Options, small: Map<string, RowResult>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-scale-'));
  try {
    const seeded = await seedCustomers(join(dataDir, 'service.sqlite'), { customers: 1_000_000, accounts: 100, listedEmail: LISTED_EMAIL });
    console.log(
      `\nSeeded ${seeded.count.toLocaleString('en')} customer events in ${(seeded.ms / 1000).toFixed(1)} s: ${Math.round(seeded.count / (seeded.ms / 1000)).toLocaleString('en')} events/s.`,
    );

    const rebuilt = await rebuildAll(join(dataDir, 'service.sqlite'));
    console.log(
      `Projection rebuild (\`projections rebuild all\`): ${rebuilt.seconds.toFixed(1)} s, ${Math.round(rebuilt.events / rebuilt.seconds).toLocaleString('en')} events/s.`,
    );
    // At the first WORKERS setting only: the question here is the size of the data.
    const scaled = { ...options, workers: options.workers.slice(0, 1) };
    const service = await startService(dataDir, { workers: scaled.workers[0], accessTokens: `${TOKEN}:${ACCOUNT}` });
    let yardsticks: Yardsticks | undefined;
    try {
      const items = seeded.sampleIds.map((id) => `/v1/customers/${id}`);
      yardsticks = await startYardsticks((await call(service, 'GET', items[0])).text.length);
      const rows: Row[] = [
        { name: 'customers: read', target: 1.9, spec: () => ({ method: 'GET', paths: items }) },
        {
          name: 'customers: list, email filter, limit 10',
          target: 2.5,
          spec: () => ({ method: 'GET', paths: [`/v1/customers?email=${LISTED_EMAIL}&limit=10`] }),
        },
      ];
      const results = await runRows([service], yardsticks, rows, scaled);
      printTable(`1,000,000 customers over 100 accounts (${seeded.perAccount.toLocaleString('en')} in the benchmarked account)`, rows, results, scaled);
      console.log('\nAt scale against small data (target: at least 0.8):');
      // Each side as a share of its own floors, so the machine's drift between the two runs cancels out.
      const key = (name: string) => rowKey(name, scaled.workers[0]);
      for (const row of rows.filter((r) => small.has(key(r.name)))) {
        const ratio = results.get(key(row.name))!.ratio / small.get(key(row.name))!.ratio;
        console.log(`  ${row.name.padEnd(42)} ${ratio.toFixed(2)} ${ratio >= 0.8 ? 'ok' : 'BELOW TARGET'}`);
      }
    } finally {
      await stopService(service);
      if (yardsticks) await stopYardsticks(yardsticks);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A row's figures, and its ratio to the floor runs right before and right after it. */
interface RowResult extends LoadResult {
  ratio: number;
  /** CPU time the process (with its workers) used over the row, where /proc tells it. */
  cpuSeconds?: number;
  /** Its CPU per request as a multiple of the bare floor's (the runs around it), and of the conventional service's on the same load. */
  cpuTimesFloor?: number;
  cpuTimesConventional?: number;
}

/**
 * CPU seconds (user and system) a process and its children have used so far, from /proc (Linux);
 * undefined elsewhere. Beside req/s it tells whether a row was short of CPU (the machine's other
 * work took it) or of something else, and what a request costs whatever the machine's load.
 */
function cpuSeconds(pid: number): number | undefined {
  const pids = [pid];
  try {
    pids.push(
      ...execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map(Number),
    );
  } catch {
    // pgrep exits 1 when the process has no children.
  }
  try {
    return pids.reduce((sum, p) => sum + cpuTicks(p), 0) / 100;
  } catch {
    return undefined;
  }
}

/** Seconds of each row's load a process runs before anything is measured (see runRows). */
const WARM_UP_SECONDS = 2;

const FLOOR = 'floor: bare NestJS + Express';
const LIMIT = 'limit: raw node:http';
const BORN_FLOOR = 'floor, prototypes set once (as the service)';

/** CPU µs per request of a run, where /proc told its CPU time. */
const cpuPerRequest = (r: LoadResult & { cpuSeconds?: number }) => (r.cpuSeconds === undefined ? undefined : (r.cpuSeconds * 1e6) / r.requests);

/**
 * Each row in its own load process, at each WORKERS setting one after the other, then on the
 * conventional service, between two runs of the floor: on a shared machine the load drifts, so each
 * row is set against the floor of its own moment, and the settings and the conventional service
 * against each other at nearly the same moment. The floor row is their mean; the limit and the
 * floor with Express's prototypes set once run at the start and at the end, and are set against the
 * floor the same way. Before any of it, every process runs each load it will be measured under for
 * WARM_UP_SECONDS.
 */
async function runRows(services: Service[], yardsticks: Yardsticks, rows: Row[], options: Options): Promise<Map<string, RowResult>> {
  const run = async (target: Service, name: string, spec: ReturnType<Row['spec']>): Promise<LoadResult & { cpuSeconds?: number }> => {
    const cpuBefore = cpuSeconds(target.child.pid!);
    const result = await load({
      ...spec,
      url: target.url,
      token: TOKEN,
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      autocannon: options.autocannon,
    });
    if (result.failures > 0) throw new Error(`${name}: ${result.failures} of ${result.requests} requests failed\n${target.output().slice(-2000)}`);
    const cpuAfter = cpuSeconds(target.child.pid!);
    return { ...result, cpuSeconds: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore };
  };
  const constant: ReturnType<Row['spec']> = { method: 'GET', paths: ['/v1/customers'] };
  const { conventional, ...floorsOnly } = yardsticks;
  // Unmeasured: each process first runs the load it will be measured under, so that every row finds
  // its code compiled by V8's optimizing tiers, as in a service that has run for a while.
  const warmUp = (target: Service, spec: ReturnType<Row['spec']>) =>
    load({ ...spec, url: target.url, token: TOKEN, connections: options.connections, durationSeconds: WARM_UP_SECONDS, autocannon: options.autocannon });
  for (const target of Object.values(floorsOnly)) await warmUp(target, constant);
  for (const row of rows) {
    for (const [i, service] of services.entries()) await warmUp(service, row.spec(i));
    if (conventional && row.conventional) await warmUp(conventional, row.conventional());
  }
  const floors = [await run(yardsticks.floor, FLOOR, constant)];
  const limits = [await run(yardsticks.limit, LIMIT, constant)];
  const bornFloors = [await run(yardsticks.bornFloor, BORN_FLOOR, constant)];
  const results = new Map<string, RowResult>();
  const last2 = <T>(of: T[]) => [of[of.length - 2], of[of.length - 1]];
  const aroundLast = () => last2(floors).reduce((sum, r) => sum + r.requestsPerSecond, 0) / 2;
  const cpuAroundLast = () => {
    const [before, after] = last2(floors).map(cpuPerRequest);
    return before === undefined || after === undefined ? undefined : (before + after) / 2;
  };
  for (const row of rows) {
    const measured: [number, LoadResult & { cpuSeconds?: number }][] = [];
    for (const [i, service] of services.entries()) measured.push([service.workers!, await run(service, row.name, row.spec(i))]);
    const plain = conventional && row.conventional ? await run(conventional, `${row.name} (conventional)`, row.conventional()) : undefined;
    floors.push(await run(yardsticks.floor, FLOOR, constant));
    const floorCpu = cpuAroundLast();
    const plainCpu = plain && cpuPerRequest(plain);
    const times = (cpu: number | undefined, of: number | undefined) => (cpu === undefined || of === undefined ? undefined : cpu / of);
    for (const [workers, result] of measured) {
      results.set(rowKey(row.name, workers), {
        ...result,
        ratio: result.requestsPerSecond / aroundLast(),
        cpuTimesFloor: times(cpuPerRequest(result), floorCpu),
        cpuTimesConventional: times(cpuPerRequest(result), plainCpu),
      });
    }
    if (plain) results.set(conventionalKey(row.name), { ...plain, ratio: plain.requestsPerSecond / aroundLast(), cpuTimesFloor: times(plainCpu, floorCpu) });
  }
  limits.push(await run(yardsticks.limit, LIMIT, constant));
  bornFloors.push(await run(yardsticks.bornFloor, BORN_FLOOR, constant));
  floors.push(await run(yardsticks.floor, FLOOR, constant));
  const mean = <R extends LoadResult>(of: R[], f: (r: R) => number) => of.reduce((sum, r) => sum + f(r), 0) / of.length;
  const summary = (of: (LoadResult & { cpuSeconds?: number })[]) => ({
    ...of[0],
    requestsPerSecond: mean(of, (r) => r.requestsPerSecond),
    p50: mean(of, (r) => r.p50),
    p99: mean(of, (r) => r.p99),
    requests: mean(of, (r) => r.requests),
    cpuSeconds: of.some((r) => r.cpuSeconds === undefined) ? undefined : mean(of, (r) => r.cpuSeconds!),
  });
  const floor = summary(floors);
  results.set(FLOOR, { ...floor, ratio: 1, cpuTimesFloor: 1 });
  for (const [name, runs] of [
    [LIMIT, limits],
    [BORN_FLOOR, bornFloors],
  ] as const) {
    const r = summary(runs);
    const floorCpu = cpuPerRequest(floor);
    results.set(name, { ...r, ratio: r.requestsPerSecond / floor.requestsPerSecond, cpuTimesFloor: floorCpu && cpuPerRequest(r)! / floorCpu });
  }
  const rates = floors.map((r) => r.requestsPerSecond);
  console.log(
    `Floor over the run: ${Math.min(...rates).toFixed(0)} to ${Math.max(...rates).toFixed(0)} req/s in ${rates.length} runs (the load others put on the machine).`,
  );
  return results;
}

/** The conventional service's run of a row. */
const conventionalKey = (name: string) => `conventional: ${name}`;

/**
 * One table row per route and WORKERS setting, and the conventional service's run of it; with two
 * settings, the second's throughput as a multiple of the first's. The target is on CPU per request,
 * as a multiple of the bare floor's.
 */
function printTable(title: string, rows: Row[], results: Map<string, RowResult>, options: Options): void {
  const [first, second] = options.workers;
  const scaling = second !== undefined;
  console.log(`\n${title}\n`);
  console.log(
    `| Route | WORKERS | req/s | p50 ms | p99 ms | cores used | CPU µs per request | CPU × bare floor | target | CPU × conventional | req/s × floor around it |${scaling ? ` req/s × WORKERS=${first} | target |` : ''}`,
  );
  console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|${scaling ? '---:|---|' : ''}`);
  const line = (name: string, workers: string, r: RowResult, target: string, versus = '') => {
    const cpu =
      r.cpuSeconds === undefined ? ' | ' : `${(r.cpuSeconds / options.durationSeconds).toFixed(2)} | ${((r.cpuSeconds * 1e6) / r.requests).toFixed(0)}`;
    const times = (x: number | undefined) => (x === undefined ? '' : x.toFixed(2));
    console.log(
      `| ${name} | ${workers} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${cpu} | ${times(r.cpuTimesFloor)} | ${target} | ${times(r.cpuTimesConventional)} | ${r.ratio.toFixed(2)} |${versus}`,
    );
  };
  for (const name of [LIMIT, BORN_FLOOR, FLOOR]) line(name, '', results.get(name)!, '', scaling ? ' | |' : '');
  for (const row of rows) {
    for (const workers of options.workers) {
      const r = results.get(rowKey(row.name, workers));
      if (!r) continue;
      const target = row.target === undefined || r.cpuTimesFloor === undefined ? '' : `≤ ${row.target} ${r.cpuTimesFloor <= row.target ? 'ok' : 'ABOVE'}`;
      let versus = '';
      if (scaling) {
        const times = r.requestsPerSecond / results.get(rowKey(row.name, first))!.requestsPerSecond;
        const goal = row.scales && workers === 2 && first === 1 ? `≥ 1.5 ${times >= 1.5 ? 'ok' : 'BELOW'}` : '';
        versus = workers === first ? ' | |' : ` ${times.toFixed(2)} | ${goal} |`;
      }
      line(row.name, String(workers), r, target, versus);
    }
    const plain = results.get(conventionalKey(row.name));
    if (plain && row.name.startsWith('customers')) line(`conventional: ${row.name.replace('customers: ', '')}`, '1', plain, '', scaling ? ' | |' : '');
  }
}

/** One of bench/floor.ts's yardsticks (`nest`, `nest-born`, `node`) in its own process, answering a body of about `bytes`. */
export async function startYardstick(kind: string, bytes: number): Promise<Service> {
  const child = spawn(process.execPath, [join(__dirname, 'floor.js'), kind, String(bytes)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { url: await listening(child, () => output), child, output: () => output };
}

/** The floor and the limit (bench/floor.ts), answering a constant body of `bytes` bytes. */
async function startYardsticks(bytes: number): Promise<Yardsticks> {
  return { floor: await startYardstick('nest', bytes), limit: await startYardstick('node', bytes), bornFloor: await startYardstick('nest-born', bytes) };
}

export async function createMany(service: Service, resource: string, bodyOf: (i: number) => Record<string, string>): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < SEEDED; i++) {
    const res = await call(service, 'POST', `/v1/${resource}`, bodyOf(i));
    ids.push((Object.values(JSON.parse(res.text).data)[0] as { id: string }).id);
  }
  return ids;
}

export function call(service: Service, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const url = new URL(path, service.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'x-request-id': randomUUID(), ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          res.statusCode! >= 200 && res.statusCode! < 300
            ? resolve({ status: res.statusCode!, text })
            : reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** `--workers 1,2`: positive integers separated by commas. */
function numberListArg(args: string[], name: string, fallback: number[]): number[] {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const values = String(args[i + 1])
    .split(',')
    .map(Number);
  if (!values.every((v) => Number.isInteger(v) && v > 0)) throw new Error(`${name} takes positive integers separated by commas`);
  return values;
}
