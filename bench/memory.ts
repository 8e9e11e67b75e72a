// `npm run bench -- memory [--creates N] [--records N | --no-account | --account-only] [--connections N] [--settings default,small,middle]`
// Where the serving process's memory goes, and what the 256 MiB settings (docs/operators.md, Memory)
// cost. Starts the built service as users run it (bench/service.ts) twice side by side on fresh data:
// with the default settings (npm start's Node flags) and with the 256 MiB ones. Drives the HTTP
// bench's load on each in turn, phase by phase (creates, reads, lists, updates of customers and
// profiles, the feed's first page; wrk or autocannon in a process of its own, bench/load-worker.ts)
// until each has answered N creates (100,000 unless told), and meanwhile samples every 250 ms the
// split of each one's resident memory: resident, anonymous and file-backed from
// /proc/<pid>/status (the kernel's counts smaps_rollup adds up), the JS heap from its own /metrics (process_memory_bytes). Prints the
// peak and the plateau (the mean of the last quarter of the samples) of each kind, and each
// phase's throughput for the two settings with their ratio: the cost of the small settings.
// Then, unless --no-account, seeds an account of 1,000,000 customers through the event store port
// (bench/seed.ts), and starts each setting's service on a copy of those events, whose read models
// it catches up by itself, as a service does on a store its read models are far behind (its peak
// sampled the same way, and how long until it answered), then measures the settings again on that
// data: reads of the million, lists, creates into the account.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECORD_KINDS } from '../src/read-models';
import { residentSplit } from '../src/metrics/memory-split';
import { openEventStore } from '../src/stores/stores.module';
import { generatorName, LoadResult, LoadSpec } from './load-worker';
import { cpuTicks, load1, numberArg } from './measure';
import { seedCustomers } from './seed';
import { load, Service, serviceNodeFlags, startService, stopService } from './service';

const TOKEN = 'memory-token';
const ACCOUNT = 'account-0';
const LISTED_EMAIL = 'listed@example.com';
const SAMPLE_EVERY_MS = 250;
const MIB = 1024 * 1024;

/** A way to run the service: Node's flags (after npm start's, which they override) and environment. */
interface Setting {
  name: string;
  nodeFlags: string[];
  env: Record<string, string>;
}

/**
 * The settings docs/operators.md gives for a container limited to 256 MiB (section Memory): keep
 * them the same as there.
 */
export const SMALL: Setting = {
  name: '256 MiB',
  nodeFlags: ['--max-semi-space-size=8', '--max-old-space-size=96'],
  env: { MALLOC_ARENA_MAX: '2', RECORD_CACHE_SIZE: '2000', KEY_CACHE_SIZE: '2000', REBUILD_ROWIDS: '250000' },
};

const DEFAULT: Setting = { name: 'default', nodeFlags: [], env: {} };

/** Between the two (docs/operators.md, Memory): twice the young generation, a larger old one. */
const MIDDLE: Setting = {
  name: '16/128',
  nodeFlags: ['--max-semi-space-size=16', '--max-old-space-size=128'],
  env: { MALLOC_ARENA_MAX: '2', RECORD_CACHE_SIZE: '2000', KEY_CACHE_SIZE: '2000', REBUILD_ROWIDS: '250000' },
};

const KINDS = ['resident', 'anonymous', 'file', 'js_heap', 'native'] as const;
type Kind = (typeof KINDS)[number];
type Sample = Record<Kind, number>;

/** Samples a process's split every SAMPLE_EVERY_MS until stopped: the kernel's counts (as the service reads its own), and the JS heap from its /metrics (or none, for a process that serves none). */
class Sampler {
  readonly samples: Sample[] = [];
  private readonly timer: NodeJS.Timeout;
  private heap = NaN;
  private native = NaN;
  private asking = false;

  constructor(
    private readonly pid: number,
    private readonly metricsUrl?: string,
  ) {
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
  }

  /** /health/ready's answers while sampled: readiness must not flap under memory pressure. */
  readonly ready = { polls: 0, notReady: 0 };

  private sample(): void {
    const split = residentSplit(this.pid);
    if (!split) return;
    if (this.metricsUrl) {
      void status(new URL('/health/ready', this.metricsUrl).href).then(
        (code) => {
          this.ready.polls++;
          if (code !== 200) this.ready.notReady++;
        },
        () => this.ready.notReady++,
      );
    }
    if (this.metricsUrl && !this.asking) {
      this.asking = true;
      void scrape(this.metricsUrl)
        .then(({ heap, native }) => {
          this.heap = heap;
          this.native = native;
        })
        .catch(() => undefined)
        .finally(() => (this.asking = false));
    }
    // Native as the service measured it beside its heap, at one moment; else what the heap leaves of the anonymous memory.
    this.samples.push({ ...split, js_heap: this.heap, native: Number.isFinite(this.native) ? this.native : split.anonymous - this.heap });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Peak and plateau (the mean of the last quarter of the samples) of each kind, in MiB. */
  summary(from = 0): Record<Kind, { peak: number; plateau: number }> {
    const samples = this.samples.slice(from);
    const last = samples.slice(Math.floor((samples.length * 3) / 4));
    const of = (kind: Kind) => {
      const values = samples.map((s) => s[kind]).filter(Number.isFinite);
      const tail = last.map((s) => s[kind]).filter(Number.isFinite);
      return { peak: Math.max(...values) / MIB, plateau: tail.reduce((a, b) => a + b, 0) / tail.length / MIB };
    };
    return Object.fromEntries(KINDS.map((k) => [k, of(k)])) as Record<Kind, { peak: number; plateau: number }>;
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The service's JS heap and native memory, from its metrics: process_memory_bytes, both read at
 * one moment (from a build without it, Node's heap size, and native unknown).
 */
async function scrape(metricsUrl: string): Promise<{ heap: number; native: number }> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(metricsUrl, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  const of = (name: string) => {
    const line = new RegExp(`^process_memory_bytes\\{[^}]*kind="${name}"[^}]*\\} (\\S+)$`, 'm').exec(text);
    return line ? Number(line[1]) : NaN;
  };
  const heap = of('js_heap');
  if (Number.isFinite(heap)) return { heap, native: of('native') };
  const total = /^nodejs_heap_size_total_bytes(?:\{[^}]*\})? (\S+)$/m.exec(text);
  return { heap: total ? Number(total[1]) : NaN, native: NaN };
}

interface Phase {
  name: string;
  creates: boolean;
  seconds: number;
  spec: (ids: Ids) => Omit<LoadSpec, 'url' | 'token' | 'connections' | 'durationSeconds'>;
}
type Ids = Record<'customers' | 'profiles', string[]>;

/** The HTTP bench's rows (bench/http.ts), creates longest: a cycle of these runs until the creates are done. */
function phases(): Phase[] {
  const list: Phase[] = [];
  for (const resource of ['customers', 'profiles'] as const) {
    const body: Record<string, string> = resource === 'customers' ? { email: 'new@example.com', company: 'Bench Co' } : { email: 'new@example.com' };
    const items = (ids: Ids) => ids[resource].map((id) => `/v1/${resource}/${id}`);
    list.push(
      { name: `${resource}: create`, creates: true, seconds: 6, spec: () => ({ method: 'POST', paths: [`/v1/${resource}`], body, rename: true }) },
      { name: `${resource}: read`, creates: false, seconds: 2, spec: (ids) => ({ method: 'GET', paths: items(ids) }) },
      {
        name: `${resource}: list, email filter, limit 10`,
        creates: false,
        seconds: 2,
        spec: () => ({ method: 'GET', paths: [`/v1/${resource}?email=${LISTED_EMAIL}&limit=10`] }),
      },
      { name: `${resource}: update`, creates: false, seconds: 2, spec: (ids) => ({ method: 'PUT', paths: items(ids), body: {}, rename: true }) },
    );
  }
  list.push({ name: 'events: feed page, limit 10', creates: false, seconds: 2, spec: () => ({ method: 'GET', paths: ['/v1/events?limit=10'] }) });
  return list;
}

interface Options {
  creates: number;
  records?: number;
  connections: number;
  settings: Setting[];
  autocannon: boolean;
  /** Only the run on the million's account. */
  accountOnly: boolean;
}

export async function main(args: string[]): Promise<void> {
  const wanted = args.includes('--settings') ? args[args.indexOf('--settings') + 1].split(',') : ['default', 'small'];
  const options: Options = {
    creates: numberArg(args, '--creates', 100_000),
    records: args.includes('--no-account') ? undefined : numberArg(args, '--records', 1_000_000),
    connections: numberArg(args, '--connections', 32),
    settings: wanted.map((w) => ({ default: DEFAULT, small: SMALL, middle: MIDDLE })[w] ?? unknownSetting(w)),
    autocannon: args.includes('--autocannon'),
    accountOnly: args.includes('--account-only'),
  };
  console.log(
    `Load: ${options.connections} connections, generator ${generatorName(options.autocannon)}; settings: ${options.settings.map(describe).join('; ')}.`,
  );
  const dirs: string[] = [];
  try {
    const fresh = options.settings.map(() => mkdtempSync(join(tmpdir(), 'pcs-memory-')));
    dirs.push(...fresh);
    if (!options.accountOnly) await measureRun(`${options.creates.toLocaleString('en')} creates on fresh data`, fresh, options, options.creates, 200);
    if (options.records) {
      const seeded = mkdtempSync(join(tmpdir(), 'pcs-memory-account-'));
      dirs.push(seeded);
      const file = join(seeded, 'service.sqlite');
      const started = Date.now();
      const { sampleIds } = await seedCustomers(file, { customers: options.records, accounts: 1, listedEmail: LISTED_EMAIL });
      await (await openEventStore({ sqliteFile: file }, RECORD_KINDS)).close();
      console.log(`\nSeeded and sealed ${options.records.toLocaleString('en')} customers of one account in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
      // Events only: each service catches its read models up by itself (see measureRun).
      const copies = options.settings.map(() => mkdtempSync(join(tmpdir(), 'pcs-memory-copy-')));
      dirs.push(...copies);
      for (const copy of copies) for (const name of readdirSync(seeded)) copyFileSync(join(seeded, name), join(copy, name));
      rmSync(seeded, { recursive: true, force: true });
      // Creates into the million's account; reads spread over it.
      await measureRun(`${options.records.toLocaleString('en')} customers in the account`, copies, options, Math.min(options.creates, 20_000), 0, sampleIds);
    }
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

function unknownSetting(name: string): never {
  throw new Error(`--settings takes default, small and middle; got ${name}`);
}

const describe = (s: Setting) =>
  `${s.name}: node ${[...serviceNodeFlags(), ...s.nodeFlags].join(' ')}${
    Object.keys(s.env).length
      ? `, ${Object.entries(s.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  }`;

const peaks = (s: ReturnType<Sampler['summary']>) =>
  `peak resident ${s.resident.peak.toFixed(0)} MiB, anonymous ${s.anonymous.peak.toFixed(0)} MiB, file ${s.file.peak.toFixed(0)} MiB`;

/**
 * One service per setting, each on its own data directory, loaded in turn phase by phase until
 * each has answered `creates` creates; the split sampled all along.
 */
async function measureRun(title: string, dataDirs: string[], options: Options, creates: number, seed: number, customerIds?: string[]): Promise<void> {
  const services: (Service & { sampler: Sampler; startSample: number; cpu: number })[] = [];
  const results = new Map<string, (LoadResult & { cpuSeconds: number })[]>();
  try {
    for (const [i, setting] of options.settings.entries()) {
      const started = Date.now();
      const service = await startService(dataDirs[i], { workers: 1, accessTokens: `${TOKEN}:${ACCOUNT}`, env: setting.env, nodeFlags: setting.nodeFlags });
      // Sampled from the start: on events its read models have not folded, the service catches up first (lists answer 503 meanwhile).
      const sampler = new Sampler(service.child.pid!, new URL('/metrics', service.url).href);
      services.push({ ...service, sampler, startSample: 0, cpu: 0 });
      await until200(service, '/v1/customers?limit=1');
      const until = sampler.samples.length > 0 ? `; until then ${peaks(sampler.summary())}` : ''; // none: it answered at once
      console.log(`${setting.name}: answering after ${((Date.now() - started) / 1000).toFixed(1)} s${until} (load ${load1()})`);
    }
    // The records the reads and updates hit: seeded through the API here, or the million's sample.
    const ids: Ids[] = [];
    for (const service of services) {
      const made: Ids = { customers: customerIds ?? [], profiles: [] };
      for (let i = 0; i < Math.max(seed, 200); i++) {
        if (i < seed) made.customers.push(await create(service, 'customers', { name: `customer ${i}`, email: LISTED_EMAIL, company: 'Bench Co' }));
        made.profiles.push(await create(service, 'profiles', { name: `profile ${i}`, email: LISTED_EMAIL, site: 'https://bench.example.com' }));
      }
      ids.push(made);
    }
    for (const service of services) {
      service.startSample = service.sampler.samples.length;
      service.cpu = cpuTicks(service.child.pid!);
      // Readiness counted under the load only: while catching up, not ready is the right answer.
      Object.assign(service.sampler.ready, { polls: 0, notReady: 0 });
    }
    const made = services.map(() => 0);
    const started = Date.now();
    // Whole cycles, every service the same phases; the order of the services turns each cycle.
    for (let cycle = 0; made.some((n) => n < creates); cycle++) {
      for (const phase of phases()) {
        for (const i of services.map((_, k) => (k + cycle) % services.length)) {
          const service = services[i];
          const cpuBefore = cpuTicks(service.child.pid!);
          const result = await load({
            ...phase.spec(ids[i]),
            url: service.url,
            token: TOKEN,
            connections: options.connections,
            durationSeconds: phase.seconds,
            autocannon: options.autocannon,
          });
          if (result.failures > 0) throw new Error(`${phase.name}: ${result.failures} of ${result.requests} failed\n${service.output().slice(-2000)}`);
          if (phase.creates) made[i] += result.requests;
          const key = `${phase.name} @${i}`;
          results.set(key, [...(results.get(key) ?? []), { ...result, cpuSeconds: (cpuTicks(service.child.pid!) - cpuBefore) / 100 }]);
        }
      }
    }
    const minutes = (Date.now() - started) / 60_000;
    console.log(
      `\n${title}: ${made.map((n, i) => `${n.toLocaleString('en')} creates (${options.settings[i].name})`).join(', ')}, ${minutes.toFixed(1)} min (load ${load1()} at the end)\n`,
    );
    console.log(`| MiB | ${options.settings.map((s) => `${s.name}: peak | ${s.name}: plateau`).join(' | ')} |`);
    console.log(`|---|${options.settings.map(() => '---:|---:').join('|')}|`);
    const summaries = services.map((s) => s.sampler.summary(s.startSample));
    for (const kind of KINDS) {
      console.log(`| ${kind} | ${summaries.map((s) => `${s[kind].peak.toFixed(0)} | ${s[kind].plateau.toFixed(0)}`).join(' | ')} |`);
    }
    console.log(`| service CPU s over the load | ${services.map((s) => `${((cpuTicks(s.child.pid!) - s.cpu) / 100).toFixed(1)} |`).join(' | ')} |`);
    console.log(
      `| /health/ready not 200, of polls every ${SAMPLE_EVERY_MS} ms | ${services.map((s) => `${s.sampler.ready.notReady} of ${s.sampler.ready.polls} |`).join(' | ')} |`,
    );
    const others = options.settings.slice(1);
    console.log(
      `\n| Route | ${options.settings.map((s) => `${s.name} req/s | ${s.name} CPU µs per request`).join(' | ')} |${others.map((s) => ` ${s.name}: req/s × ${options.settings[0].name} | CPU per request × ${options.settings[0].name} |`).join('')}`,
    );
    console.log(`|---|${options.settings.map(() => '---:|---:').join('|')}|${others.map(() => '---:|---:|').join('')}`);
    const ratios = others.map(() => ({ rate: [] as number[], cpu: [] as number[] }));
    const geomean = (values: number[]) => Math.exp(values.reduce((a, r) => a + Math.log(r), 0) / values.length);
    for (const phase of phases()) {
      // Total requests over total seconds and total CPU, every run of the phase.
      const figures = services.map((_, i) => {
        const runs = results.get(`${phase.name} @${i}`) ?? [];
        const requests = runs.reduce((a, r) => a + r.requests, 0);
        return {
          rate: requests / runs.reduce((a, r) => a + r.requests / r.requestsPerSecond, 0),
          cpuMicros: (runs.reduce((a, r) => a + r.cpuSeconds, 0) * 1e6) / requests,
        };
      });
      const versus = figures.slice(1).map((f, k) => {
        const rate = f.rate / figures[0].rate;
        const cpu = f.cpuMicros / figures[0].cpuMicros;
        ratios[k].rate.push(rate);
        ratios[k].cpu.push(cpu);
        return ` ${rate.toFixed(2)} | ${cpu.toFixed(2)} |`;
      });
      console.log(`| ${phase.name} | ${figures.map((f) => `${f.rate.toFixed(0)} | ${f.cpuMicros.toFixed(0)}`).join(' | ')} |${versus.join('')}`);
    }
    for (const [k, setting] of others.entries()) {
      console.log(
        `\n${setting.name} against ${options.settings[0].name}, geometric mean over the routes: req/s × ${geomean(ratios[k].rate).toFixed(2)}, CPU per request × ${geomean(ratios[k].cpu).toFixed(2)}`,
      );
    }
  } finally {
    for (const service of services) {
      service.sampler.stop();
      await stopService(service);
    }
  }
}

/** Asks until the answer is 200; a connection the service closed meanwhile (a keep-alive socket reused as it closed) is asked again. */
async function until200(service: Service, path: string): Promise<void> {
  for (;;) {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(new URL(path, service.url), { agent, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end();
    }).catch(() => 0);
    if (status === 200) return;
    if (service.child.exitCode !== null) throw new Error(`The service exited with ${service.child.exitCode}:\n${service.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function create(service: Service, resource: string, body: object): Promise<string> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(`/v1/${resource}`, service.url),
      { method: 'POST', agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          res.statusCode === 201
            ? resolve(Object.values((JSON.parse(text) as { data: Record<string, { id: string }> }).data)[0].id)
            : reject(new Error(`POST /v1/${resource}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
