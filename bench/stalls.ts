// The event loop's stalls in a CPU profile (`node --cpu-prof`), each put down to its cause. A stall
// is one task longer than a threshold: the samples from the loop's leaving its wait for I/O until
// it waits again or starts another task (the outermost JS function under the profile's root
// changes; garbage collection and Node's own code in between count for the task they interrupt).
// Each sample counts for the first cause its stack shows (below), and the stall for the cause with
// the most time in it.
import { readFileSync } from 'node:fs';
import { CpuProfile, own, ProfileNode } from './profile';

export interface Stall {
  /** ms from the profile's start. */
  at: number;
  ms: number;
  /** ms of it by cause. */
  causes: Map<string, number>;
  /** ms of it by the JS function on top of the stack (native calls count for their caller), with its file and line. */
  functions: Map<string, number>;
  cause: string;
}

/**
 * Causes, by a frame anywhere in a sample's stack: the first of this list that one matches. Garbage
 * collection and Node's own code with no JS frame are stacks of their own; a statement the fold of
 * a batch runs counts for the fold, a log line's write for the log.
 */
const CAUSES: [(frame: ProfileNode['callFrame']) => boolean, string][] = [
  [(f) => f.functionName === '(garbage collector)', 'garbage collection'],
  [(f) => own('projections/').test(f.url), 'fold of a batch (projector)'],
  [(f) => /node_modules\/(pino|sonic-boom)\//.test(f.url) || own('logging/').test(f.url), 'log lines'],
  [(f) => own('sealing/', 'key-store/').test(f.url), 'encryption and data keys'],
  [
    (f) => /node_modules\/better-sqlite3\//.test(f.url) || own('read-store/', 'event-store/', 'storage/', 'records/', 'feed/').test(f.url),
    'SQLite statements of a request',
  ],
  [(f) => own('metrics/').test(f.url) || /node_modules\/prom-client\//.test(f.url), 'metrics'],
  [(f) => f.url.includes('/dist/') || f.url.includes('node_modules/'), 'other JS of a request (HTTP, validation, NestJS)'],
  [(f) => f.functionName === '(program)', 'V8 and Node, no JS frame'],
];

/** The stalls of `file` longer than `overMs`, from `skipMs` after its start to `skipEndMs` before its end (a start and a shutdown are no stalls of serving). */
export function stallsOf(file: string, overMs: number, skipMs = 0, skipEndMs = 0): Stall[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const causeOf = new Map<number, string>();
  const cause = (id: number): string => {
    let known = causeOf.get(id);
    if (known) return known;
    const stack: ProfileNode['callFrame'][] = [];
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) stack.push(byId.get(node)!.callFrame);
    known = CAUSES.find(([test]) => stack.some(test))?.[1] ?? 'other';
    causeOf.set(id, known);
    return known;
  };
  // The outermost function of each sample's stack (the root's child), which names its task.
  const rootId = profile.nodes[0].id;
  const taskOf = new Map<number, number>();
  const task = (id: number): number => {
    let known = taskOf.get(id);
    if (known === undefined) {
      known = id;
      for (let node = parent.get(id); node !== undefined && node !== rootId; node = parent.get(node)) known = node;
      taskOf.set(id, known);
    }
    return known;
  };
  const between = new Set(['(garbage collector)', '(program)']);
  const topFunction = (id: number): string => {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    return url ? `${functionName || '(anonymous)'} ${url.replace(/^.*\/(dist|node_modules)\//, '')}:${lineNumber + 1}` : functionName;
  };
  const stalls: Stall[] = [];
  let current: Stall | undefined;
  let currentTask: number | undefined;
  let elapsed = 0;
  const close = () => {
    if (current && current.ms > overMs && current.at >= skipMs) {
      current.cause = [...current.causes].sort((a, b) => b[1] - a[1])[0][0];
      stalls.push(current);
    }
    current = undefined;
    currentTask = undefined;
  };
  // Sample i lasts until sample i + 1 (its time delta).
  for (let i = 0; i < profile.samples.length; i++) {
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    const node = byId.get(profile.samples[i])!;
    if (node.callFrame.functionName === '(idle)') close();
    else {
      if (!between.has(node.callFrame.functionName)) {
        if (currentTask !== undefined && task(node.id) !== currentTask) close();
        currentTask = task(node.id);
      }
      current ??= { at: elapsed, ms: 0, causes: new Map(), functions: new Map(), cause: '' };
      current.ms += ms;
      const c = cause(node.id);
      current.causes.set(c, (current.causes.get(c) ?? 0) + ms);
      const f = topFunction(node.id);
      current.functions.set(f, (current.functions.get(f) ?? 0) + ms);
    }
    elapsed += ms;
  }
  close();
  return stalls.filter((stall) => stall.at + stall.ms <= elapsed - skipEndMs);
}

/** A table of `stalls` by cause: how many it led, their total and longest, and its time in all stalls. */
export function stallTable(stalls: Stall[]): string {
  const rows = new Map<string, { led: number; longest: number; inStalls: number }>();
  for (const stall of stalls) {
    for (const [cause, ms] of stall.causes) {
      const row = rows.get(cause) ?? { led: 0, longest: 0, inStalls: 0 };
      row.inStalls += ms;
      if (cause === stall.cause) {
        row.led++;
        row.longest = Math.max(row.longest, stall.ms);
      }
      rows.set(cause, row);
    }
  }
  const lines = ['| cause | stalls it led | longest of those, ms | its time in all stalls, ms |', '|---|---:|---:|---:|'];
  for (const [cause, row] of [...rows].sort((a, b) => b[1].inStalls - a[1].inStalls)) {
    lines.push(`| ${cause} | ${row.led} | ${row.led ? row.longest.toFixed(1) : '–'} | ${row.inStalls.toFixed(0)} |`);
  }
  return lines.join('\n');
}
