import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

/**
 * What a process's resident memory is made of, in bytes, from Linux's /proc/<pid>/smaps_rollup:
 * `resident` (Rss) is `anonymous` (memory of the process's own: heaps, stacks) plus `file` (pages of
 * mapped files: the node binary and its libraries, better-sqlite3's, SQLite's shared-memory index
 * of the WAL, `-shm`), the kernel's figures for the whole process, every thread included.
 */
export interface ResidentSplit {
  resident: number;
  anonymous: number;
  file: number;
}

/** The split of /proc/<pid>/smaps_rollup (`self`: this process); undefined where there is none (not Linux, or an old kernel). */
export function residentSplit(pid: number | 'self' = 'self'): ResidentSplit | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1');
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  const resident = kb('Rss');
  const anonymous = kb('Anonymous');
  if (!Number.isFinite(resident) || !Number.isFinite(anonymous)) return undefined;
  return { resident, anonymous, file: resident - anonymous };
}

/** The kinds `process_memory_bytes` reports, each a part of the resident size (see memorySplit). */
export type MemoryKind = 'resident' | 'anonymous' | 'file' | 'js_heap' | 'native';

/**
 * The resident size split by what holds it: `js_heap` is the main thread's V8 heap as committed in
 * memory (every space: young, old, code, large objects; used or not yet collected); `native` is the
 * rest of the anonymous memory: malloc's (SQLite's page and statement caches, Buffers and other
 * ArrayBuffers' contents, node:crypto's KeyObjects and OpenSSL, the worker threads' own V8 heaps,
 * thread stacks, and what malloc keeps freed but not returned); `file` the mapped files. On Linux
 * only: elsewhere, undefined.
 */
export function memorySplit(): Record<MemoryKind, number> | undefined {
  const split = residentSplit();
  if (!split) return undefined;
  // Committed pages of the heap that are resident: what of the anonymous memory V8's heap holds.
  const jsHeap = Math.min(getHeapStatistics().total_physical_size, split.anonymous);
  return { ...split, js_heap: jsHeap, native: split.anonymous - jsHeap };
}
