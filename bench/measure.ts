// What every bench reads of a process and of its own arguments.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

/** The machine's load average over the last minute, as the tables print it. */
export const load1 = () => loadavg()[0].toFixed(2);

/** utime + stime of a process (its threads together), in clock ticks (1/100 s), from /proc (Linux); of its main thread alone with `mainThread`. */
export function cpuTicks(pid: number, { mainThread = false } = {}): number {
  const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8')
    .split(') ')[1]
    .split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** The bytes a process has had written to storage (its writes that reached the page cache for a file, counted by the kernel), from /proc (Linux). */
export function writtenBytes(pid: number): number {
  return Number(/^write_bytes: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

/** The `p` quantile (0 to 1) of `values`, the nearest rank below. */
export const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
};

/** `--name N`: a positive integer, or `fallback` when the option is not given. */
export function numberArg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const value = Number(args[i + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} takes a positive integer`);
  return value;
}
