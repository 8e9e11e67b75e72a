// A memory-limited cgroup for a service the memory bench starts (`--cgroup`): a child of the bench's
// own group, so the service reads the limit as it would in a container, and the kernel enforces it.
// Needs root and a writable cgroup file system: cgroup v1's memory controller, or v2's.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function makeCgroup(name: string, bytes: number): string {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = lines.find((line) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(line));
  const v2 = lines.find((line) => line.startsWith('0::'));
  const [dir, file] = v1
    ? [join('/sys/fs/cgroup/memory', v1.split(':')[2], name), 'memory.limit_in_bytes']
    : v2 && existsSync('/sys/fs/cgroup/cgroup.controllers')
      ? [join('/sys/fs/cgroup', v2.slice(3), name), 'memory.max']
      : [];
  if (!dir || !file) throw new Error('--cgroup: no cgroup memory controller found for this process');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, file), String(bytes));
  return dir;
}

/** Once its processes have exited. */
export function removeCgroup(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // still busy a moment after its process exited: left for the kernel to show, harmless
  }
}

/** How often the kernel refused the group memory (v1: memory.failcnt), and whether it killed a process for it (v2: memory.events oom_kill). */
export function cgroupPressure(dir: string): string {
  const read = (file: string) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8').trim() : undefined);
  const failcnt = read('memory.failcnt');
  const peak = read('memory.max_usage_in_bytes') ?? read('memory.peak');
  const events = read('memory.events');
  const kills = events ? /oom_kill (\d+)/.exec(events)?.[1] : undefined;
  return [
    peak ? `charged peak ${(Number(peak) / 1024 / 1024).toFixed(0)} MiB (page cache included)` : undefined,
    failcnt ? `reached its limit ${failcnt} times (the kernel reclaims page cache then)` : undefined,
    kills ? `${kills} OOM kills` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
}
