// `npm run bench -- memory [--limits 256m,512m,1g,none] [--cgroup] [--creates N] [--records N | --no-account | --account-only] [--streams N --feed N | --no-streams] [--connections N]`
// Whether the service, sized by itself to its memory limit (src/config/memory.ts), keeps its
// anonymous memory under that limit: at each limit (256 MiB, 512 MiB and 1 GiB unless told; `none`:
// no limit, the defaults), a service started with MEMORY_LIMIT and no other setting (with --cgroup:
// in a cgroup of that limit, which the service reads and the kernel enforces). Three loads:
// - the HTTP bench's (creates, reads, lists, updates of customers and profiles, the feed's first
//   page; wrk or autocannon in a process of its own, bench/load-worker.ts), the services side by
//   side phase by phase until each has answered N creates (100,000 unless told);
// - the change feed's event streams (unless --no-streams): 1,500 streams (--streams) replaying a
//   feed of 2,000 events (--feed) to its end, then 1,500 that never read, until the service cuts
//   them off; then what it holds with no stream open;
// - unless --no-account: an account of 1,000,000 customers seeded through the event store port
//   (bench/seed.ts), each service started on a copy of those events, whose read models it catches
//   up by itself before it answers, then serving reads of the million, lists, creates into it.
// Samples every 250 ms resident, anonymous and file-backed memory from /proc/<pid>/status (the
// kernel's counts smaps_rollup adds up) and the JS heap from the service's /metrics; prints the peak
// and plateau (the mean of the last quarter of the samples) of each kind, each route's throughput and
// CPU per request, and at the end each limit's anonymous peaks against it.
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMemoryLimit } from '../src/config/memory';
import { RECORD_KINDS } from '../src/read-models';
import { residentSplit } from '../src/metrics/memory-split';
import { openEventStore } from '../src/stores/stores.module';
import { cgroupPressure, makeCgroup, removeCgroup } from './cgroup';
import { openStream, sleep, stalledStream, Stream } from './feed-client';
import { generatorName, LoadResult, LoadSpec } from './load-worker';
import { cpuTicks, load1, numberArg } from './measure';
import { seedCustomers } from './seed';
import { load, Service, startService, stopService } from './service';

const TOKEN = 'memory-token';
const ACCOUNT = 'account-0';
const LISTED_EMAIL = 'listed@example.com';
const SAMPLE_EVERY_MS = 250;
const MIB = 1024 * 1024;

/** A memory limit the service is started under: MEMORY_LIMIT, or a cgroup of that limit; none: the defaults. */
interface Setting {
  name: string;
  bytes?: number;
  env: Record<string, string>;
  cgroup: boolean;
}

function setting(limit: string, cgroup: boolean): Setting {
  if (limit === 'none') return { name: 'no limit', env: {}, cgroup: false };
  const bytes = parseMemoryLimit(limit);
  return { name: limit, bytes, env: cgroup ? {} : { MEMORY_LIMIT: limit }, cgroup };
}

/** A service of a setting, started in a cgroup of its limit if asked: the group removed once it stopped. */
async function start(dataDir: string, s: Setting, env: Record<string, string> = {}) {
  const cgroup = s.cgroup && s.bytes ? makeCgroup(`pcs-memory-${process.pid}-${s.name}-${Date.now()}`, s.bytes) : undefined;
  try {
    const service = await startService(dataDir, { workers: 1, accessTokens: `${TOKEN}:${ACCOUNT}`, env: { ...s.env, ...env }, cgroup });
    const memoryLine = /"msg":"(Memory: [^"]*)"/.exec(service.output())?.[1];
    return { ...service, cgroup, memoryLine };
  } catch (error) {
    if (cgroup) removeCgroup(cgroup);
    throw error;
  }
}

async function stop(service: Service & { cgroup?: string }): Promise<string> {
  if (service.child.exitCode === null && service.child.signalCode === null) await stopService(service);
  const pressure = service.cgroup ? cgroupPressure(service.cgroup) : '';
  if (service.cgroup) removeCgroup(service.cgroup);
  return pressure;
}

/** Each setting's anonymous peaks, MiB, for the closing table. */
const peaksOf = new Map<string, Record<string, string>>();
const note = (s: Setting, column: string, value: string) => peaksOf.set(s.name, { ...peaksOf.get(s.name), [column]: value });
const ofLimit = (s: Setting, mib: number) => `${mib.toFixed(0)}${s.bytes ? ` (${((mib * MIB * 100) / s.bytes).toFixed(0)} %)` : ''}`;

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
  /** The event streams' load: how many streams, over a feed of how many events; 0: none. */
  streams: number;
  feed: number;
}

export async function main(args: string[]): Promise<void> {
  const limits = args.includes('--limits') ? args[args.indexOf('--limits') + 1].split(',') : ['256m', '512m', '1g'];
  const cgroup = args.includes('--cgroup');
  const options: Options = {
    creates: numberArg(args, '--creates', 100_000),
    records: args.includes('--no-account') ? undefined : numberArg(args, '--records', 1_000_000),
    connections: numberArg(args, '--connections', 32),
    settings: limits.map((limit) => setting(limit, cgroup)),
    autocannon: args.includes('--autocannon'),
    accountOnly: args.includes('--account-only'),
    streams: args.includes('--no-streams') || args.includes('--account-only') ? 0 : numberArg(args, '--streams', 1500),
    feed: numberArg(args, '--feed', 2000),
  };
  console.log(
    `Load: ${options.connections} connections, generator ${generatorName(options.autocannon)}; limits: ${options.settings
      .map((s) => `${s.name}${s.bytes ? (s.cgroup ? ' (a cgroup of it)' : ' (MEMORY_LIMIT)') : ''}`)
      .join(', ')}; load average ${load1()}.`,
  );
  const dirs: string[] = [];
  try {
    const fresh = options.settings.map(() => mkdtempSync(join(tmpdir(), 'pcs-memory-')));
    dirs.push(...fresh);
    if (!options.accountOnly)
      await guarded('load', options, () => measureRun(`${options.creates.toLocaleString('en')} creates on fresh data`, fresh, options, options.creates, 200));
    if (options.streams > 0) {
      for (const s of options.settings) {
        const dir = mkdtempSync(join(tmpdir(), 'pcs-memory-streams-'));
        dirs.push(dir);
        await guarded('streams', { settings: [s] }, () => measureStreams(dir, s, options));
      }
    }
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
      await guarded('catch-up', options, () =>
        measureRun(`${options.records!.toLocaleString('en')} customers in the account`, copies, options, Math.min(options.creates, 20_000), 0, sampleIds),
      );
    }
  } finally {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  const columns = ['load', 'catch-up', 'serving the million', 'streams', 'no stream open, after'];
  console.log(`\nAnonymous memory at its peak, MiB (share of the limit):\n\n| limit | ${columns.join(' | ')} |\n|---|${columns.map(() => '---:|').join('')}`);
  for (const s of options.settings) console.log(`| ${s.name} | ${columns.map((c) => peaksOf.get(s.name)?.[c] ?? '').join(' | ')} |`);
}

/** A run that failed (a service killed at its cgroup's limit, say) is told and noted, and the bench goes on. */
async function guarded(column: string, options: Pick<Options, 'settings'>, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    console.log(`\n${column} FAILED: ${(error as Error).message.slice(0, 3000)}`);
    for (const s of options.settings) note(s, column, 'failed');
  }
}

const peaks = (s: ReturnType<Sampler['summary']>) =>
  `peak resident ${s.resident.peak.toFixed(0)} MiB, anonymous ${s.anonymous.peak.toFixed(0)} MiB, file ${s.file.peak.toFixed(0)} MiB`;

/**
 * One service per setting, each on its own data directory, loaded in turn phase by phase until
 * each has answered `creates` creates; the split sampled all along.
 */
async function measureRun(title: string, dataDirs: string[], options: Options, creates: number, seed: number, customerIds?: string[]): Promise<void> {
  const services: (Service & { cgroup?: string; sampler: Sampler; startSample: number; cpu: number })[] = [];
  const catchingUp = customerIds !== undefined;
  const results = new Map<string, (LoadResult & { cpuSeconds: number })[]>();
  try {
    for (const [i, setting] of options.settings.entries()) {
      const started = Date.now();
      const service = await start(dataDirs[i], setting);
      console.log(`${setting.name}: ${service.memoryLine}`);
      // Sampled from the start: on events its read models have not folded, the service catches up first (lists answer 503 meanwhile).
      const sampler = new Sampler(service.child.pid!, new URL('/metrics', service.url).href);
      services.push({ ...service, sampler, startSample: 0, cpu: 0 });
      await until200(service, '/v1/customers?limit=1');
      const until = sampler.samples.length > 0 ? `; until then ${peaks(sampler.summary())}` : ''; // none: it answered at once
      console.log(`${setting.name}: answering after ${((Date.now() - started) / 1000).toFixed(1)} s${until} (load ${load1()})`);
      if (catchingUp && sampler.samples.length > 0) note(setting, 'catch-up', ofLimit(setting, sampler.summary().anonymous.peak));
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
    for (const [i, s] of options.settings.entries()) note(s, catchingUp ? 'serving the million' : 'load', ofLimit(s, summaries[i].anonymous.peak));
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
    for (const [i, service] of services.entries()) {
      service.sampler.stop();
      const pressure = await stop(service);
      if (pressure) console.log(`${options.settings[i].name}'s cgroup: ${pressure}`);
    }
  }
}

/**
 * The change feed's event streams against one service (issue 55's attack): `streams` streams
 * replaying a feed of `feed` events to its end, then as many that never read, held until the service
 * has cut them off (two heartbeats without draining: 20 s); then a pause with no stream open.
 */
async function measureStreams(dataDir: string, s: Setting, options: Options): Promise<void> {
  const env = {
    // One token opens them all: the caps per token and account (and the connections) raised above the load.
    FEED_STREAMS_PER_TOKEN: String(options.streams * 2),
    FEED_STREAMS_PER_ACCOUNT: String(options.streams * 2),
    MAX_CONNECTIONS: String(Math.max(2000, options.streams + 100)),
  };
  const service = await start(dataDir, s, env);
  const sampler = new Sampler(service.child.pid!, new URL('/metrics', service.url).href);
  const phase = (from: number) => sampler.summary(from);
  const line = (name: string, summary: ReturnType<Sampler['summary']>) =>
    console.log(`| ${s.name}: ${name} | ${KINDS.map((k) => `${summary[k].peak.toFixed(0)} / ${summary[k].plateau.toFixed(0)}`).join(' | ')} |`);
  try {
    // The feed: half customers, half profiles, 16 at a time.
    let made = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (made < options.feed) {
          const n = made++;
          if (n % 2) await create(service, 'profiles', { name: `profile ${n}`, email: LISTED_EMAIL, site: 'https://bench.example.com' });
          else await create(service, 'customers', { name: `customer ${n}`, email: LISTED_EMAIL, company: 'Bench Co' });
        }
      }),
    );
    const began = sampler.samples.length;
    let started = Date.now();
    const streams: Stream[] = Array.from({ length: options.streams }, () => openStream(service.url, TOKEN, undefined, () => undefined));
    const opened = await Promise.allSettled(streams.map((st) => st.opened));
    const refused = opened.filter((o) => o.status === 'rejected').length;
    // Until every stream has had the whole feed (or ended), 5 minutes at most.
    while (streams.some((st) => st.entries < options.feed && !st.ended) && Date.now() - started < 300_000) await sleep(250);
    const whole = streams.filter((st) => st.entries >= options.feed).length;
    const received = streams.reduce((sum, st) => sum + st.entries, 0);
    for (const st of streams) st.close();
    const replayed = phase(began);
    console.log(
      `\n${s.name}: ${options.streams} streams replayed the ${options.feed}-event feed (${whole} to its end, ${refused} refused; ${received.toLocaleString('en')} entries sent, ${(received / options.streams).toFixed(0)} a stream) in ${((Date.now() - started) / 1000).toFixed(0)} s (load ${load1()})`,
    );
    const stalledFrom = sampler.samples.length;
    started = Date.now();
    const stalled = Array.from({ length: options.streams }, () => stalledStream(service.url, TOKEN));
    // Two heartbeats (10 s each by default) without draining, and the service cuts each off.
    await sleep(25_000);
    for (const socket of stalled) socket.destroy();
    const stalledSummary = phase(stalledFrom);
    console.log(`${s.name}: ${options.streams} streams that never read, held 25 s (the service cuts one off after two heartbeats without draining)`);
    const afterFrom = sampler.samples.length;
    await sleep(10_000);
    const after = phase(afterFrom);
    console.log(`\n| MiB, peak / plateau | ${KINDS.join(' | ')} |\n|---|${KINDS.map(() => '---:|').join('')}`);
    line('replaying', replayed);
    line('never reading', stalledSummary);
    line('no stream open, 10 s', after);
    note(s, 'streams', ofLimit(s, Math.max(replayed.anonymous.peak, stalledSummary.anonymous.peak)));
    note(s, 'no stream open, after', ofLimit(s, after.anonymous.plateau));
  } finally {
    sampler.stop();
    const pressure = await stop(service);
    if (pressure) console.log(`${s.name}'s cgroup: ${pressure}`);
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
