// `npm run bench -- latency [--rate N] [--duration S] [--only <parts of routes' names, comma-separated>] [--profile] [--keep]`: the service's latency at a fixed
// rate (not its saturation): the built service as users run it (WORKERS=1, logs at info, metrics,
// rate limits on), N requests a second (1,000 unless told) per route for S seconds (15) after 3 s
// of the same load unmeasured, from a generator in its own process (bench/fixed-rate.ts) that
// times each request from when it was due. Per route: p50, p99 and the longest latency, the
// service's CPU per request (its threads together), how busy its main thread was (the share of the
// run's time it ran: near 100 %, requests queue behind one another), the bytes it wrote to storage
// per request, the event loop's delay over the run (the service's own
// `event_loop_delay_seconds`), and how long its event store's appends took, each to the end of its
// disk sync (`event_store_call_duration_seconds`, as the bucket their p99 and their longest fall
// in), and each write's p99 as a multiple of the durable-write floor's (goal: at most 1.5, and no
// event-loop delay over 20 ms). The floors (bench/floor.ts), which share no code with the service, at the same rate: a bare
// NestJS + Express route, what the machine, Node and the generator cost; the same app's POST as a
// durable write, appended to a file and answered once an fdatasync covers it (group-committed),
// what this disk costs a durable write; and the same padded to 64 KB a write, about what the
// service writes per create, what this disk costs that many bytes a request. After the service's
// rows, the conventional service's create and update (bench/conventional/: the plain NestJS +
// better-sqlite3 way, one synced commit per write on the event loop), with the same ratio: what
// the plain way's tail is at that rate on this machine. With --profile the
// service runs under `--cpu-prof`, and the event loop's stalls over 5 ms are listed by cause
// (bench/stalls.ts); the latencies of that run include the profiler's cost.
import { fork } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FixedRateResult, FixedRateSpec } from './fixed-rate';
import { ACCOUNT, call, createMany, LISTED_EMAIL, startYardstick, TOKEN } from './http';
import { cpuTicks, load1, numberArg, writtenBytes } from './measure';
import { Service, startConventional, startService, stopService } from './service';
import { stallsOf, stallTable } from './stalls';

const WARM_UP_SECONDS = 3;
const CONNECTIONS = 64;
/** What counts as a stall: the bound for attributing one. */
const STALL_MS = 5;
/** The goals for the service's writes (issue 55): p99 at most this many times the durable-write floor's, in the same run. */
const WRITE_P99_TARGET = 1.5;
/** …and no event-loop delay longer than this, ms, on any route. */
const LOOP_DELAY_TARGET_MS = 20;

type Load = Omit<FixedRateSpec, 'url' | 'token' | 'rate' | 'durationSeconds' | 'connections'>;

function fixedRate(spec: FixedRateSpec): Promise<FixedRateResult> {
  return new Promise((resolve, reject) => {
    const worker = fork(join(__dirname, 'fixed-rate.js'));
    worker.once('message', (result: FixedRateResult) => resolve(result));
    worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`fixed-rate worker exited with ${code}`))));
    worker.send(spec);
  });
}

interface Scrape {
  /** The event-loop delay since the scrape before (each scrape resets it), ms. */
  delay: { p99: number; max: number };
  /** The event store's appends so far, each to the end of its disk sync: how many took at most `le` seconds, by bucket. */
  appends: Map<string, number>;
}

/** What the service's own /metrics says of its event loop and its appends. */
async function scrape(service: Service): Promise<Scrape> {
  const text = (await call(service, 'GET', '/metrics')).text;
  const of = (quantile: string) => Number(text.match(new RegExp(`^event_loop_delay_seconds\\{quantile="${quantile}"[^}]*\\} (\\S+)$`, 'm'))?.[1] ?? NaN) * 1000;
  const appends = new Map<string, number>();
  for (const [, labels, count] of text.matchAll(/^event_store_call_duration_seconds_bucket\{([^}]*)\} (\S+)$/gm)) {
    if (!labels.includes('operation="appendToStream"') || !labels.includes('outcome="ok"')) continue;
    const le = labels.match(/le="([^"]+)"/)![1];
    appends.set(le, (appends.get(le) ?? 0) + Number(count));
  }
  return { delay: { p99: of('0.99'), max: of('1') }, appends };
}

/**
 * The appends between two scrapes: the histogram bucket their p99 and their longest fall in, as
 * "≤ bound" in ms. A write's latency well past its append's is the event loop's or the queue's; one
 * near it is the event store's, mostly the disk's sync.
 */
function appendBounds(before: Scrape, after: Scrape): string {
  const bounds = [...after.appends.keys()].sort((a, b) => (a === '+Inf' ? 1 : b === '+Inf' ? -1 : Number(a) - Number(b)));
  const within = bounds.map((le) => (after.appends.get(le) ?? 0) - (before.appends.get(le) ?? 0));
  const total = within[within.length - 1] ?? 0;
  if (total === 0) return '–';
  const bound = (count: number) => {
    const le = bounds[within.findIndex((n) => n >= count)];
    return le === '+Inf' ? `> ${Number(bounds[bounds.length - 2]) * 1000}` : `≤ ${Number(le) * 1000}`;
  };
  return `${bound(Math.ceil(total * 0.99))} / ${bound(total)}`;
}

export async function main(args: string[]): Promise<void> {
  const rate = numberArg(args, '--rate', 1000);
  const durationSeconds = numberArg(args, '--duration', 15);
  const profile = args.includes('--profile');
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1].split(',') : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-latency-'));
  const profileDir = join(dataDir, 'profile');
  console.log(
    `Fixed rate: ${rate} requests/s per route for ${durationSeconds} s (after ${WARM_UP_SECONDS} s unmeasured), at most ${CONNECTIONS} keep-alive connections; latency from when each request was due. Service at WORKERS=1${profile ? ', under --cpu-prof' : ''}.`,
  );
  const service = await startService(dataDir, {
    workers: 1,
    accessTokens: `${TOKEN}:${ACCOUNT}`,
    nodeFlags: profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--cpu-prof-interval=500'] : [],
  });
  let floor: Service | undefined;
  let durableFloor: Service | undefined;
  let paddedFloor: Service | undefined;
  let conventional: (Service & { dataDir: string }) | undefined;
  try {
    const customers = await createMany(service, 'customers', (i) => ({ name: `customer ${i}`, email: LISTED_EMAIL, company: 'Bench Co' }));
    await createMany(service, 'profiles', (i) => ({ name: `profile ${i}`, email: LISTED_EMAIL, site: 'https://bench.example.com' }));
    const items = customers.map((id) => `/v1/customers/${id}`);
    const bytes = (await call(service, 'GET', items[0])).text.length;
    floor = await startYardstick('nest', bytes);
    durableFloor = await startYardstick('nest-durable', bytes);
    paddedFloor = await startYardstick('nest-durable-64k', bytes);
    conventional = await startConventional(mkdtempSync(join(tmpdir(), 'pcs-bench-latency-conventional-')), `${TOKEN}:${ACCOUNT}`);
    const conventionalItems = (await createMany(conventional, 'customers', (i) => ({ name: `customer ${i}`, email: LISTED_EMAIL, company: 'Bench Co' }))).map(
      (id) => `/v1/customers/${id}`,
    );
    const rows: [string, Service, Load][] = [
      ['floor: bare NestJS route', floor, { method: 'GET', paths: ['/v1/customers'] }],
      ['customers: read', service, { method: 'GET', paths: items }],
      ['customers: list, email filter, limit 10', service, { method: 'GET', paths: [`/v1/customers?email=${LISTED_EMAIL}&limit=10`] }],
      [
        'floor: bare NestJS route, durable write (fdatasync)',
        durableFloor,
        { method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true },
      ],
      [
        'floor: durable write of 64 KB',
        paddedFloor,
        { method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true },
      ],
      ['customers: create', service, { method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true }],
      ['customers: update', service, { method: 'PUT', paths: items, body: {}, rename: true }],
      ['profiles: create', service, { method: 'POST', paths: ['/v1/profiles'], body: { email: 'new@example.com' }, rename: true }],
      [
        'conventional: create',
        conventional,
        { method: 'POST', paths: ['/v1/customers'], body: { email: 'new@example.com', company: 'Bench Co' }, rename: true },
      ],
      ['conventional: update', conventional, { method: 'PUT', paths: conventionalItems, body: {}, rename: true }],
    ];
    console.log(`Load average ${load1()} at the start.\n`);
    console.log(
      `| route | p50 ms | p99 ms | max ms | p99 × durable floor (writes ≤ ${WRITE_P99_TARGET}) | event-loop delay p99 / max, ms (max ≤ ${LOOP_DELAY_TARGET_MS}) | appends p99 / max, ms | CPU µs/request | main thread busy | KB written/request |`,
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    let durableP99: number | undefined;
    for (const [name, target, spec] of rows.filter(([name]) => !only || only.some((part) => name.includes(part)))) {
      const run = (seconds: number) => fixedRate({ ...spec, url: target.url, token: TOKEN, rate, durationSeconds: seconds, connections: CONNECTIONS });
      await run(WARM_UP_SECONDS);
      const own = target === service;
      const before = own ? await scrape(service) : undefined;
      const pid = target.child.pid!;
      const [ticks, mainTicks, bytes, started] = [cpuTicks(pid), cpuTicks(pid, { mainThread: true }), writtenBytes(pid), performance.now()];
      const result = await run(durationSeconds);
      const cpu = ((cpuTicks(pid) - ticks) * 10_000) / result.requests;
      const busy = ((cpuTicks(pid, { mainThread: true }) - mainTicks) * 10) / (performance.now() - started);
      const written = (writtenBytes(pid) - bytes) / 1024 / result.requests;
      if (result.failures > 0)
        throw new Error(
          `${name}: ${result.failures} of ${result.requests} requests failed (${JSON.stringify(result.failed)})\n${target.output().slice(-2000)}`,
        );
      const after = own ? await scrape(service) : undefined;
      const delay = after ? `${after.delay.p99.toFixed(1)} / ${after.delay.max.toFixed(0)}${after.delay.max > LOOP_DELAY_TARGET_MS ? ' ABOVE' : ''}` : '–';
      const appends = before && after ? appendBounds(before, after) : '–';
      if (target === durableFloor) durableP99 = result.p99;
      // A write of the service against the durable floor run before it (absent with --only leaving it out).
      const write = (own || target === conventional) && spec.method !== 'GET';
      const ratio =
        write && durableP99 !== undefined
          ? `${(result.p99 / durableP99).toFixed(2)}${result.p99 / durableP99 > WRITE_P99_TARGET ? ' ABOVE' : ' ok'}`
          : target === durableFloor
            ? '1.00'
            : '–';
      console.log(
        `| ${name} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${result.max.toFixed(0)} | ${ratio} | ${delay} | ${appends} | ${cpu.toFixed(0)} | ${(busy * 100).toFixed(0)} % | ${written.toFixed(1)} |`,
      );
      if (result.senderLateMax > 20) console.log(`  (the generator itself ran up to ${result.senderLateMax.toFixed(0)} ms late: the machine is busy)`);
    }
    console.log(`\nLoad average ${load1()} at the end.`);
  } finally {
    await stopService(service);
    if (floor) await stopService(floor);
    if (durableFloor) await stopService(durableFloor);
    if (paddedFloor) await stopService(paddedFloor);
    if (conventional) {
      await stopService(conventional);
      rmSync(conventional.dataDir, { recursive: true, force: true });
    }
  }
  if (profile) {
    const [file] = readdirSync(profileDir);
    copyFileSync(join(profileDir, file), 'latency.cpuprofile');
    console.log(`\nThe profile: latency.cpuprofile (\`npm run bench -- profile latency.cpuprofile\` shows it by stage).`);
    // The first seconds are the start and the seeding, the last one the shutdown.
    const stalls = stallsOf('latency.cpuprofile', STALL_MS, 5_000, 1_000);
    console.log(`\nThe event loop's stalls over ${STALL_MS} ms while the routes ran (profiled, so each is longer than unprofiled): ${stalls.length}\n`);
    console.log(stallTable(stalls));
    const longest = [...stalls].sort((a, b) => b.ms - a.ms).slice(0, 10);
    console.log('\nThe longest:');
    for (const s of longest) {
      const parts = [...s.causes].sort((a, b) => b[1] - a[1]).map(([c, ms]) => `${c} ${ms.toFixed(1)}`);
      const top = [...s.functions]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 2)
        .map(([f, ms]) => `${f} ${ms.toFixed(1)}`);
      console.log(`  ${s.ms.toFixed(1)} ms at ${(s.at / 1000).toFixed(1)} s: ${parts.join(', ')}; most in ${top.join(', ')}`);
    }
  }
  // --keep: the data directory stays, with the service's log (e.g. of a run with BENCH_NODE_OPTIONS=--trace-gc).
  if (args.includes('--keep')) console.log(`\nThe service's data directory and log: ${dataDir}`);
  else rmSync(dataDir, { recursive: true, force: true });
}
