import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMemoryLimit } from '../src/config/memory';
import { openStores } from '../src/stores/stores.module';
import { RECORD_KINDS } from '../src/read-models';
import { cgroupPressure, makeCgroup, removeCgroup } from './cgroup';
import { writeCustomersFile } from './import-file';
import { load1 } from './measure';
import { ROOT } from './service';

/**
 * `npm run bench -- import [rows] [--limits none,1g,512m,256m] [--cgroup] [--no-again]`: writes an
 * NDJSON file of 1,000,000 generated customers (or the number given), then, at each memory limit
 * (none unless told), imports it into a fresh embedded store with the CLI (`node dist/cli.js import
 * customers <file> --account bench`) in a process of its own, the service stopped, with
 * MEMORY_LIMIT and no other setting (with --cgroup: in a cgroup of that limit, which the CLI reads
 * and the kernel enforces): the rows a second to its end (the read models and the change feed
 * folded), its CPU, its peak resident memory (`VmHWM` of /proc/<pid>/status) and its peak anonymous
 * memory (`RssAnon`, sampled: what a container's limit counts), and the CLI's `Memory:` line. Then
 * imports the same file again (every row skipped), unless --no-again. BENCH_SERVICE_DIST runs
 * another build's CLI (its dist/). Target: at least 20,000 rows/s on 2 cores; memory within each limit.
 */
export async function main(args: string[]): Promise<void> {
  const rows = Number(args.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
  const at = args.indexOf('--limits');
  const limits = (at >= 0 ? args[at + 1] : 'none').split(',');
  const cgroup = args.includes('--cgroup');
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
  try {
    const file = join(dir, 'customers.ndjson');
    let started = Date.now();
    await writeCustomersFile(file, rows);
    console.log(`wrote ${rows} customers to ${file} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const limit of limits) {
      const bytes = limit === 'none' ? undefined : parseMemoryLimit(limit);
      const dataDir = join(dir, `data-${limit}`);
      // An empty store, as the service's first start leaves it.
      await (await openStores({ sqliteFile: join(dataDir, 'service.sqlite') }, RECORD_KINDS)).eventStore.close();
      for (const run of args.includes('--no-again') ? ['first import'] : ['first import', 'the same file again']) {
        const load = load1();
        started = Date.now();
        const group = cgroup && bytes ? makeCgroup(`pcs-import-${process.pid}-${limit}-${Date.now()}`, bytes) : undefined;
        const ran = await importProcess(file, dataDir, cgroup ? {} : bytes ? { MEMORY_LIMIT: limit } : {}, group);
        const pressure = group ? cgroupPressure(group) : '';
        if (group) removeCgroup(group);
        const seconds = (Date.now() - started) / 1000;
        const ofLimit = (kib: number) => `${Math.round(kib / 1024)} MiB${bytes ? ` (${Math.round((kib * 1024 * 100) / bytes)} %)` : ''}`;
        console.log(
          `${limit === 'none' ? 'no limit' : `${limit}${group ? ' (cgroup)' : ' (MEMORY_LIMIT)'}`}, ${run}: ${rows} rows in ${seconds.toFixed(1)} s (read models folded): ` +
            `${Math.round(rows / seconds)} rows/s, ${ran.cpuSeconds.toFixed(1)} s CPU, peak RSS ${ofLimit(ran.peakKiB)}, peak anonymous ${ofLimit(ran.peakAnonKiB)}, ` +
            `exit ${ran.code}, load ${load}; ${ran.stdout.trim().split('\n').pop()}${pressure ? `; the cgroup: ${pressure}` : ''}`,
        );
        console.log(`  ${/^Memory: .*$/m.exec(ran.stderr)?.[0] ?? '(no Memory line)'}`);
        if (ran.code !== 0) console.log(ran.stderr.slice(-2000));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CLI's import as a process (in the cgroup if given), its peak RSS and anonymous memory sampled from /proc every 50 ms, and its CPU time (user + system). */
async function importProcess(
  file: string,
  dataDir: string,
  env: Record<string, string>,
  cgroup?: string,
): Promise<{ code: number | string | null; peakKiB: number; peakAnonKiB: number; cpuSeconds: number; stdout: string; stderr: string }> {
  const command = [
    process.execPath,
    // BENCH_SERVICE_DIST: another build's dist/ (a checkout's, built there), to measure it against this one in turn.
    join(process.env.BENCH_SERVICE_DIST ?? join(ROOT, 'dist'), 'cli.js'),
    'import',
    'customers',
    file,
    '--account',
    'bench',
  ];
  // In the cgroup: a shell joins it, then becomes the CLI (exec: the same pid).
  const [program, ...args] = cgroup ? ['/bin/sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, ...command] : command;
  const child = spawn(program, args, {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, ACCESS_TOKENS: 'bench-token:bench', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let peakKiB = 0;
  let peakAnonKiB = 0;
  let cpuSeconds = 0;
  const sample = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      peakKiB = Math.max(peakKiB, kib('VmHWM'));
      peakAnonKiB = Math.max(peakAnonKiB, kib('RssAnon'));
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      cpuSeconds = (Number(fields[11]) + Number(fields[12])) / 100; // utime and stime, in clock ticks
    } catch {
      // exited between two samples
    }
  }, 50);
  const code = await new Promise<number | string | null>((resolve) => child.on('close', (c, signal) => resolve(c ?? signal)));
  clearInterval(sample);
  return { code, peakKiB, peakAnonKiB, cpuSeconds, stdout, stderr };
}
