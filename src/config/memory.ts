import { ConfigError } from './config-error';

/**
 * The memory the service sizes itself to (docs/operators.md, "Memory"): MEMORY_LIMIT, else the
 * container's (cgroup) limit, else none. From it, each process's V8 heap, glibc's arenas, the caches
 * and the rebuild's rowid tables, so that the service keeps its anonymous memory under the limit
 * with no flag given; with no limit, the service's long-standing defaults.
 */
export interface MemoryLimit {
  bytes: number;
  source: 'MEMORY_LIMIT' | 'cgroup';
}

/** What one process is given: Node's heap flags and glibc's arenas (fixed at its start), the caches (config.ts's defaults). */
export interface ProcessSizing {
  /** --max-semi-space-size, MiB: the young generation commits two of them. */
  semiSpaceMiB: number;
  /** --max-old-space-size, MiB; undefined: V8's own limit. */
  oldSpaceMiB?: number;
  /** MALLOC_ARENA_MAX; undefined: glibc's default (8 per core). */
  mallocArenaMax?: number;
  recordCacheSize: number;
  keyCacheSize: number;
  rebuildRowids: number;
  /** A bulk import's (the CLI's import): rows appended a batch, two batches under way, and its fold at most two batches behind. */
  importBatchRows: number;
  /** A bulk import's page cache, MiB, of each SQLite connection it writes through (the events', the keys'): SQLite's sorter takes as much again while the read models' indexes are built. */
  importCacheMiB: number;
  /** A bulk import's REBUILD_ROWIDS, for the fold that follows it: more than a serving process's, as the import holds little else. */
  importRowids: number;
}

export interface MemoryPlan {
  limit?: MemoryLimit;
  /** Each serving process's share of the limit, MiB (the whole limit with one worker). */
  perProcessMiB?: number;
  /** Each serving process: the only one, or each worker. */
  server: ProcessSizing;
  /** WORKERS>1: the cluster primary, which serves nothing. */
  primary: Pick<ProcessSizing, 'semiSpaceMiB' | 'oldSpaceMiB'>;
}

const MIB = 1024 * 1024;
/** Below this the service cannot hold even its code and the framework with room to serve. */
export const MIN_LIMIT_MIB = 128;
/** Kept for the cluster primary out of a limit shared by workers: its code, the framework, its heap, measured 45–55 MiB anonymous. */
export const PRIMARY_SHARE_MIB = 64;
/** The defaults with no limit: `--max-semi-space-size=32` (12 % less CPU per create than Node's 16), V8's own old-generation limit. */
export const UNLIMITED: ProcessSizing = {
  semiSpaceMiB: 32,
  recordCacheSize: 10_000,
  keyCacheSize: 10_000,
  rebuildRowids: 2_000_000,
  importBatchRows: 10_000,
  importCacheMiB: 64,
  importRowids: 2_000_000,
};
/** A cgroup without a limit reports a number near 2^63 (v1) or 2^64 (libuv's "none"). */
const NO_LIMIT_ABOVE = 2 ** 60;

/** MEMORY_LIMIT: bytes, or a number with k, m or g (powers of 1024, as Docker's `-m`; `Mi`, `MB` read alike). */
export function parseMemoryLimit(raw: string): number {
  const match = /^(\d+)\s*(?:([kmg])(?:ib?|b)?)?$/i.exec(raw.trim());
  const bytes = match ? Number(match[1]) * 1024 ** ' kmg'.indexOf((match[2] ?? ' ').toLowerCase()) : NaN;
  if (!Number.isSafeInteger(bytes)) {
    throw new ConfigError(`MEMORY_LIMIT must be bytes or a number with k, m or g (such as 256m or 1g); got "${raw}"`);
  }
  if (bytes < MIN_LIMIT_MIB * MIB) throw new ConfigError(`MEMORY_LIMIT must be at least ${MIN_LIMIT_MIB}m; got "${raw}"`);
  return bytes;
}

/**
 * MEMORY_LIMIT, else the cgroup's memory limit as Node reads it (process.constrainedMemory(): libuv
 * follows /proc/self/cgroup to the process's own group, cgroup v2's memory.max or v1's
 * memory.limit_in_bytes), else none.
 */
export function memoryLimit(env: NodeJS.ProcessEnv, constrained: () => number = () => process.constrainedMemory()): MemoryLimit | undefined {
  const raw = env.MEMORY_LIMIT?.trim();
  if (raw) return { bytes: parseMemoryLimit(raw), source: 'MEMORY_LIMIT' };
  const bytes = constrained();
  return bytes > 0 && bytes < NO_LIMIT_ABOVE ? { bytes, source: 'cgroup' } : undefined;
}

/**
 * The rules, for a process given `mib` (docs/operators.md, "Memory"), measured at 256 MiB, 512 MiB
 * and 1 GiB with `npm run bench -- memory`:
 * - semi-spaces: 1/32 of it, a power of two from 2 to 32 MiB (8 at 256 MiB, 32 from 1 GiB);
 * - old generation: 3/8 of it (96 MiB at 256): V8 collects in full before it, and what it leaves
 *   is for native memory (SQLite's caches, malloc, the checkpoint and opening threads), which the
 *   measurements put at about as much as the heap;
 * - caches: 2,000 folded records per kind and 2,000 data keys per 256 MiB, at most 10,000 each;
 * - REBUILD_ROWIDS: 250,000 per 256 MiB (about 50 bytes each, per read model), at most 2,000,000;
 * - MALLOC_ARENA_MAX=2: fewer arenas keeping freed memory (10 MiB less with the heap bounded);
 * - a bulk import (measured with `npm run bench -- import`): 2,500 rows a batch per 256 MiB, at
 *   most 10,000; page caches of 1/64 of it, 8 to 64 MiB (in a container the kernel's page cache,
 *   which its limit counts too, serves the files better than larger caches of SQLite's own);
 *   500,000 rowids per 256 MiB, at most 2,000,000 (past them, a fold's inserts go to random pages).
 */
export function sizeFor(mib: number): ProcessSizing {
  const per256 = mib / 256;
  const semi = 2 ** Math.floor(Math.log2(mib / 32));
  return {
    semiSpaceMiB: Math.min(32, Math.max(2, semi)),
    oldSpaceMiB: Math.max(48, Math.floor((mib * 3) / 8)),
    mallocArenaMax: 2,
    recordCacheSize: Math.min(10_000, Math.max(500, Math.floor(per256 * 2000))),
    keyCacheSize: Math.min(10_000, Math.max(500, Math.floor(per256 * 2000))),
    rebuildRowids: Math.min(2_000_000, Math.floor(per256 * 250_000)),
    importBatchRows: Math.min(10_000, Math.max(1_000, Math.floor(per256 * 2_500))),
    importCacheMiB: Math.min(64, Math.max(8, Math.floor(mib / 64))),
    importRowids: Math.min(2_000_000, Math.floor(per256 * 500_000)),
  };
}

/** The plan for a limit (or none) and WORKERS: with several workers, each gets an equal share of what the primary leaves. */
export function memoryPlan(limit: MemoryLimit | undefined, workers: number): MemoryPlan {
  if (!limit) return { server: UNLIMITED, primary: { semiSpaceMiB: UNLIMITED.semiSpaceMiB } };
  const mib = Math.floor(limit.bytes / MIB);
  const perProcessMiB = workers > 1 ? Math.floor((mib - PRIMARY_SHARE_MIB) / workers) : mib;
  return { limit, perProcessMiB, server: sizeFor(perProcessMiB), primary: { semiSpaceMiB: 2, oldSpaceMiB: 48 } };
}

const HEAP_FLAGS = { semiSpaceMiB: 'max-semi-space-size', oldSpaceMiB: 'max-old-space-size' } as const;
export type HeapSetting = keyof typeof HEAP_FLAGS;

/** Node's flags for a sizing: each heap setting it has. */
export function heapFlags(sizing: Pick<ProcessSizing, HeapSetting>, skip: HeapSetting[] = []): string[] {
  return (Object.keys(HEAP_FLAGS) as HeapSetting[])
    .filter((setting) => sizing[setting] !== undefined && !skip.includes(setting))
    .map((setting) => `--${HEAP_FLAGS[setting]}=${sizing[setting]}`);
}

/** The heap settings given to Node already (`args`: its execArgv and NODE_OPTIONS' words): those are the user's, and win. */
export function givenHeapSettings(args: string[]): HeapSetting[] {
  const given = (flag: string) => args.some((arg) => new RegExp(`^--${flag.replace(/-/g, '[-_]')}(=|$)`).test(arg));
  return (Object.keys(HEAP_FLAGS) as HeapSetting[]).filter((setting) => given(HEAP_FLAGS[setting]));
}
