import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStores } from '../src/stores/stores.module';
import { RECORD_KINDS } from '../src/read-models';
import { writeCustomersFile } from './import-file';
import { ROOT } from './service';

/**
 * `npm run bench -- import [rows]`: writes an NDJSON file of 1,000,000 generated customers (or the
 * number given), then imports it into a fresh embedded store with the CLI (`node dist/cli.js import
 * customers <file> --account bench`) in a process of its own, the service stopped: the rows a
 * second to its end (the read models and the change feed folded), its CPU and its peak resident
 * memory (`VmHWM` of /proc/<pid>/status). Then imports the same file again (every row skipped).
 * Target: at least 20,000 rows/s on 2 cores, memory bounded whatever the file's size.
 */
export async function main(args: string[]): Promise<void> {
  const rows = Number(args[0] ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'bench-import-'));
  try {
    const file = join(dir, 'customers.ndjson');
    let started = Date.now();
    await writeCustomersFile(file, rows);
    console.log(`wrote ${rows} customers to ${file} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const dataDir = join(dir, 'data');
    // An empty store, as the service's first start leaves it.
    await (await openStores({ sqliteFile: join(dataDir, 'service.sqlite') }, RECORD_KINDS)).eventStore.close();
    for (const run of ['first import', 'the same file again']) {
      started = Date.now();
      const { code, peakKiB, cpuSeconds, stdout } = await importProcess(file, dataDir);
      const seconds = (Date.now() - started) / 1000;
      console.log(
        `${run}: ${rows} rows in ${seconds.toFixed(1)} s (read models folded): ${Math.round(rows / seconds)} rows/s, ${cpuSeconds.toFixed(1)} s CPU, peak RSS ${Math.round(peakKiB / 1024)} MiB, exit ${code}; ${stdout.trim().split('\n').pop()}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The CLI's import as a process, its peak RSS sampled from /proc every 50 ms, and its CPU time (user + system). */
async function importProcess(file: string, dataDir: string): Promise<{ code: number | null; peakKiB: number; cpuSeconds: number; stdout: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'import', 'customers', file, '--account', 'bench'], {
    env: { ...process.env, DATA_DIR: dataDir, ACCESS_TOKENS: 'bench-token:bench' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  let peakKiB = 0;
  let cpuSeconds = 0;
  const sample = setInterval(() => {
    try {
      peakKiB = Math.max(peakKiB, Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0));
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      cpuSeconds = (Number(fields[11]) + Number(fields[12])) / 100; // utime and stime, in clock ticks
    } catch {
      // exited between two samples
    }
  }, 50);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearInterval(sample);
  return { code, peakKiB, cpuSeconds, stdout };
}
