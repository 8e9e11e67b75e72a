// `npm run bench -- scale [--records N] [--history N] [--seconds S]`
// The service at a million records. Seeds N customers (1,000,000 unless told) into one account
// through the event store port (bench/seed.ts: the adapter's own appends, many a transaction), seals
// them as a first start after the upgrade to encryption does, folds them with the operators' rebuild
// (`node dist/cli.js projections rebuild all`, its own process: rate, peak memory, the write-ahead
// log it leaves while another connection holds the file, as the service's would), then starts the
// service as users run it (dist/main.js, npm start's Node flags, logs at info, metrics, rate limits
// on, raised through the environment above the load) and measures, per request, wall time and CPU
// (utime + stime from /proc): every list shape, deep pages, history and as-of reads of a record
// written 20,000 times through the API, and another account's reads while the first sends its most
// expensive lists from 8 connections.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEventStore } from '../src/stores/stores.module';
import { RECORD_KINDS } from '../src/read-models';
import { Database } from '../src/storage/sqlite-database';
import { cpuTicks, load1, pct } from './measure';
import { seedCustomers } from './seed';
import { load as runLoad, ROOT, Service, startService, stopService } from './service';

const A = { token: 'scale-token-a', account: 'account-0' };
const B = { token: 'scale-token-b', account: 'account-b' };
const LISTED_EMAIL = 'listed@example.com';

interface Options {
  records: number;
  history: number;
  seconds: number;
}

export async function main(args: string[]): Promise<void> {
  const options: Options = {
    records: numberArg(args, '--records', 1_000_000),
    history: numberArg(args, '--history', 20_000),
    seconds: numberArg(args, '--seconds', 20),
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-scale-'));
  const file = join(dataDir, 'service.sqlite');
  const lines: string[] = [];
  const row = (what: string, figure: string, note = '') => {
    const line = `| ${what} | ${figure} | ${note} | ${load1()} |`;
    lines.push(line);
    console.log(line);
  };
  try {
    const seeded = await seedCustomers(file, { customers: options.records, accounts: 1, listedEmail: LISTED_EMAIL });
    console.log(`seeded ${seeded.count} CustomerCreated events in one account in ${(seeded.ms / 1000).toFixed(1)} s (load ${load1()})`);
    let started = Date.now();
    await (await openEventStore({ sqliteFile: file }, RECORD_KINDS)).close();
    console.log(`sealed them in ${((Date.now() - started) / 1000).toFixed(1)} s (load ${load1()})`);

    console.log('\n| Measure | Figure | Notes | load (1 min) |\n|---|---:|---|---:|');
    const rebuild = await cliRebuild(dataDir);
    row(
      `CLI rebuild of ${options.records.toLocaleString('en')} customer events (\`projections rebuild all\`)`,
      `${rebuild.eventsPerSecond.toLocaleString('en')} events/s`,
      `${rebuild.seconds.toFixed(1)} s wall, ${rebuild.cpuSeconds.toFixed(1)} s CPU; peak RSS (VmHWM) ${rebuild.peakMb} MB, peak anonymous (RssAnon) ${rebuild.peakAnonMb} MiB; WAL after it ${rebuild.walMb} MB (another connection holding the file)`,
    );

    const service = await startService(dataDir, { workers: 1, accessTokens: `${A.token}:${A.account},${B.token}:${B.account}` });
    // Until the read models have reached the head (they have: the rebuild folded it), reads answer 503.
    while ((await timed(service, A, '/v1/customers?limit=1')).status === 503) await new Promise((r) => setTimeout(r, 200));
    try {
      const customerOf = async (auth: typeof A, body: object) =>
        (Object.values(JSON.parse((await call(service, auth, 'POST', '/v1/customers', body)).text).data)[0] as { id: string }).id;
      const bId = await customerOf(B, { name: 'B reader', email: 'b@example.com' });
      // The long-lived record: written `history` times through the API, as a client would (snapshots every 100 revisions).
      const old = await customerOf(A, { name: 'Old record', email: 'old@example.com' });
      started = Date.now();
      const before = Math.floor(Date.now() / 1000);
      for (let i = 1; i <= options.history; i++) await call(service, A, 'PUT', `/v1/customers/${old}`, { name: `Old record v${i}` });
      console.log(`wrote ${options.history} updates to one record in ${((Date.now() - started) / 1000).toFixed(1)} s`);

      const cursor = (seq: number) => Buffer.from(`seq:${seq}`).toString('base64url');
      const shapes: [string, string][] = [
        ['list, no filter, limit 10', '/v1/customers?limit=10'],
        ['list, exact email (matches 1 in 50), limit 10', `/v1/customers?email=${LISTED_EMAIL}&limit=10`],
        ['list, exact mobile (matches 1)', '/v1/customers?mobile=09120012345'],
        ['list, company substring matching many ("Company 1")', '/v1/customers?company=Company%201&limit=10'],
        ['list, company substring matching none ("zzz")', '/v1/customers?company=zzz&limit=10'],
        ['list, deep page by cursor (after the 1,000th oldest)', `/v1/customers?limit=10&after=${cursor(1000)}`],
        ['list, offset 10,000 (the largest allowed)', '/v1/customers?limit=10&offset=10000'],
        ['list, company substring, offset 10,000', '/v1/customers?company=Company%201&limit=10&offset=10000'],
        ['the count alone (limit 1, X-Total-Count)', '/v1/customers?limit=1'],
        [`history, first page (limit 100) of a ${options.history.toLocaleString('en')}-event record`, `/v1/customers/${old}/history?limit=100`],
        [`history, last page`, `/v1/customers/${old}/history?limit=100&offset=${Math.max(0, Math.min(10_000, options.history - 99))}`],
        [`as-of read of that record, from before its updates`, `/v1/customers/${old}?as_of=${before}`],
        [`as-of read of that record, now`, `/v1/customers/${old}?as_of=${Math.floor(Date.now() / 1000) + 1}`],
        ['read one record', `/v1/customers/${seeded.sampleIds[0]}`],
      ];
      let costliest = { path: shapes[0][1], cpu: 0 };
      for (const [name, path] of shapes) {
        const m = await measure(service, A, path, 60);
        const note = `${m.status}${m.total === undefined ? '' : `, X-Total-Count ${m.total}`}; wall p50 ${m.p50.toFixed(1)} ms, max ${m.max.toFixed(1)} ms`;
        row(name, `${m.cpuMs.toFixed(2)} ms CPU`, note);
        if (path.startsWith('/v1/customers?') && m.status === 200 && m.cpuMs > costliest.cpu) costliest = { path, cpu: m.cpuMs };
      }
      const refused = await measure(service, A, '/v1/customers?limit=10&offset=10001', 3);
      row('list, offset 10,001', `${refused.status}`, 'refused, naming the limit');

      // Two tenants: A's costliest list from 8 connections; B's single reads meanwhile, one at a time.
      const loadRun = runLoad({ url: service.url, token: A.token, method: 'GET', paths: [costliest.path], connections: 8, durationSeconds: options.seconds });
      await new Promise((r) => setTimeout(r, 1000));
      const cpuBefore = cpuTicks(service.child.pid!);
      const bReads: number[] = [];
      const live: number[] = [];
      const until = Date.now() + (options.seconds - 2) * 1000;
      while (Date.now() < until) {
        bReads.push((await timed(service, B, `/v1/customers/${bId}`)).ms);
        if (bReads.length % 10 === 0) live.push((await timed(service, B, '/health/live')).ms);
        await new Promise((r) => setTimeout(r, 20));
      }
      const cores = (cpuTicks(service.child.pid!) - cpuBefore) / 100 / (options.seconds - 2);
      const a = await loadRun;
      row(
        `two tenants, WORKERS=1: B's reads while A sends \`${costliest.path}\` from 8 connections`,
        `p50 ${pct(bReads, 0.5).toFixed(1)} ms, p99 ${pct(bReads, 0.99).toFixed(1)} ms`,
        `${bReads.length} reads of B, target p99 < 50 ms ${pct(bReads, 0.99) < 50 ? 'met' : 'NOT MET'}; /health/live p99 ${pct(live, 0.99).toFixed(1)} ms; A: ${a.requestsPerSecond.toFixed(0)} req/s, p99 ${a.p99.toFixed(0)} ms, ${a.failures} failures; service used ${cores.toFixed(2)} cores`,
      );
    } finally {
      await stopService(service);
    }
    console.log(
      `\nLoad average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The operators' rebuild in its own process, its peak memory read from /proc while it runs (the
 * anonymous part too: what a container's limit counts), and the log's size when it is done. The
 * settings a small container gives it (NODE_OPTIONS, MALLOC_ARENA_MAX, REBUILD_ROWIDS) are passed
 * on from the bench's environment.
 */
async function cliRebuild(
  dataDir: string,
): Promise<{ eventsPerSecond: number; seconds: number; cpuSeconds: number; peakMb: number; peakAnonMb: number; walMb: string }> {
  // Another connection holds the file, as the running service's would: else the last one to close deletes the log.
  const holder = new Database(join(dataDir, 'service.sqlite'));
  holder.pragma('journal_mode = WAL');
  try {
    const started = Date.now();
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'projections', 'rebuild', 'all', '--grace-seconds', '0', '--json'], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, NO_COLOR: '1', ...passedOn(['NODE_OPTIONS', 'MALLOC_ARENA_MAX', 'REBUILD_ROWIDS']) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    let peakKb = 0;
    let peakAnonKb = 0;
    let ticks = 0;
    const sample = setInterval(() => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        peakKb = Math.max(peakKb, Number(status.match(/VmHWM:\s+(\d+)/)![1]));
        peakAnonKb = Math.max(peakAnonKb, Number(status.match(/RssAnon:\s+(\d+)/)![1]));
        ticks = cpuTicks(child.pid!);
      } catch {
        // exited between two samples
      }
    }, 50);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearInterval(sample);
    if (code !== 0) throw new Error(`rebuild exited with ${code}: ${err.slice(-2000)}`);
    const { rebuilt } = JSON.parse(out) as { rebuilt: { events: number; ms: number }[] };
    const events = Math.max(...rebuilt.map((r) => r.events));
    const ms = Math.max(...rebuilt.map((r) => r.ms));
    const wal = join(dataDir, 'service.sqlite-wal');
    return {
      eventsPerSecond: Math.round(events / (ms / 1000)),
      seconds: (Date.now() - started) / 1000,
      cpuSeconds: ticks / 100,
      peakMb: Math.round(peakKb / 1024),
      peakAnonMb: Math.round(peakAnonKb / 1024),
      walMb: existsSync(wal) ? (statSync(wal).size / 1e6).toFixed(1) : '0 (none)',
    };
  } finally {
    holder.close();
  }
}

/** `count` requests one at a time: the status, X-Total-Count, wall times and the service's CPU per request. */
async function measure(service: Service, auth: typeof A, path: string, count: number) {
  await timed(service, auth, path); // its statements prepared, its code warm
  const walls: number[] = [];
  const before = cpuTicks(service.child.pid!);
  let last: { status: number; total?: string } = { status: 0 };
  for (let i = 0; i < count; i++) {
    const r = await timed(service, auth, path);
    walls.push(r.ms);
    last = r;
  }
  const cpuMs = ((cpuTicks(service.child.pid!) - before) * 10) / count;
  return { status: last.status, total: last.total, cpuMs, p50: pct(walls, 0.5), max: Math.max(...walls) };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function timed(service: Service, auth: typeof A, path: string): Promise<{ ms: number; status: number; total?: string }> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, service.url), { agent, headers: { authorization: `Bearer ${auth.token}` } }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.statusCode!, total: res.headers['x-total-count'] as string | undefined }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

function call(service: Service, auth: typeof A, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, service.url),
      { method, agent, headers: { authorization: `Bearer ${auth.token}`, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          res.statusCode! < 300 ? resolve({ status: res.statusCode!, text }) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function numberArg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  const value = i < 0 ? Number(process.env[`SCALE_${name.slice(2).toUpperCase()}`] ?? fallback) : Number(args[i + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} takes a positive integer`);
  return value;
}

/** The variables of `names` set in this process's environment. */
function passedOn(names: string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]])));
}
