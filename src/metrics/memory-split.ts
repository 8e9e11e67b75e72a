import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

/**
 * What a process's resident memory is made of, in bytes: `resident` is `anonymous` (memory of the
 * process's own: heaps, stacks) plus `file` (pages of mapped files: the node binary and its
 * libraries, better-sqlite3's, and shared memory such as SQLite's index of the WAL, `-shm`), the
 * kernel's figures for the whole process, every thread included.
 */
export interface ResidentSplit {
  resident: number;
  anonymous: number;
  file: number;
}

/**
 * The split from Linux's /proc/<pid>/status (`self`: this process): VmRSS, RssAnon, and RssFile
 * plus RssShmem, the kernel's running counts, the figures /proc/<pid>/smaps_rollup adds up (Rss,
 * Anonymous) but read in microseconds: smaps_rollup walks every page table, 9 ms at 800 MiB, and
 * this is read on the event loop. Undefined where there is none (not Linux, or a kernel before 4.5).
 */
export function residentSplit(pid: number | 'self' = 'self'): ResidentSplit | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  const [anonymous, file, shmem] = [kb('RssAnon'), kb('RssFile'), kb('RssShmem')];
  if (![anonymous, file, shmem].every(Number.isFinite)) return undefined;
  return { resident: anonymous + file + shmem, anonymous, file: file + shmem };
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
