/**
 * Imported by main.ts and cli.ts right after runtime.ts, before anything else is loaded: gives this
 * process the heap flags and MALLOC_ARENA_MAX its memory plan (config/memory.ts) asks for. V8 reads
 * its flags, and glibc MALLOC_ARENA_MAX, only as a process starts, so a process without them starts
 * itself again with them, once: process.execve replaces its image in place (same pid, same stdio),
 * so whatever started it (npm, a container's init, a supervisor) still holds it and its signals
 * still reach it. Flags the user gave (on Node's command line or in NODE_OPTIONS), and a
 * MALLOC_ARENA_MAX of their own, win. A cluster worker is given its flags by its primary
 * (workerLaunch). The CLI (dist/cli.js) is sized so for its long commands (SIZED_COMMANDS), as one
 * process given the whole limit; its other commands end before a restart would pay.
 */
import cluster from 'node:cluster';
import { basename } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { AppConfig, loadConfig } from './config/config';
import { ConfigError } from './config/config-error';
import { givenHeapSettings, heapFlags, HeapSetting, ProcessSizing } from './config/memory';

/** Set on the restart: what it added (Node's flags, `MALLOC_ARENA_MAX=n`), so the restarted process neither restarts again nor takes them for the user's. */
const ADDED = 'SERVICE_MEMORY_SIZED';

interface Applied {
  /** What this process was given by the plan. */
  added: string[];
  /** The heap settings the user gave, which the plan left alone. */
  given: HeapSetting[];
  /** Why the plan's flags could not be applied, if they could not. */
  notApplied?: string;
}

const nodeOptionsWords = () => (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);

/** The CLI's commands that hold much memory for long: an import, a rebuild, verify's fold, a backup's or a restore's copy. */
const SIZED_COMMANDS = /^(import|verify|backup|restore|projections rebuild)( |$)/;

/** Which process this is: the service's, the CLI's running a long command, or the CLI's running another (or its help), not sized. */
function role(): 'service' | 'command' | undefined {
  if (basename(require.main?.filename ?? '') !== 'cli.js') return 'service';
  const args = process.argv.slice(2);
  const words = args.filter((arg) => !arg.startsWith('-')).join(' ');
  return SIZED_COMMANDS.test(words) && !args.includes('--help') && !args.includes('-h') ? 'command' : undefined;
}

const ROLE = role();

/** Whether this process is the CLI running a long command, sized as the service is. */
export const sizedCommand = ROLE === 'command';

export const applied: Applied = apply();

function apply(): Applied {
  const marked = process.env[ADDED];
  if (marked !== undefined) {
    delete process.env[ADDED];
    const added = marked.split(' ').filter(Boolean);
    return { added, given: givenHeapSettings([...process.execArgv.filter((a) => !added.includes(a)), ...nodeOptionsWords()]) };
  }
  const given = givenHeapSettings([...process.execArgv, ...nodeOptionsWords()]);
  // A worker without the mark was forked by a primary that could not restart itself: nothing to add either.
  if (cluster.isWorker || ROLE === undefined) return { added: [], given };
  // The CLI is one process, whatever the service's WORKERS in the environment it may share with it.
  if (sizedCommand) delete process.env.WORKERS;
  let config: Omit<AppConfig, 'accessTokens'>;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) return { added: [], given }; // main() reports it
    throw error;
  }
  const sizing = config.workers > 1 ? config.memory.primary : config.memory.server;
  const flags = heapFlags(sizing, given);
  const arenas = config.memory.server.mallocArenaMax;
  const env = arenas !== undefined && process.env.MALLOC_ARENA_MAX === undefined ? [`MALLOC_ARENA_MAX=${arenas}`] : [];
  const added = [...flags, ...env];
  if (added.length === 0) return { added, given };
  // Node 22.15 and later (@types/node is older).
  const { execve } = process as unknown as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never };
  if (typeof execve !== 'function') return { added: [], given, notApplied: `Node ${process.versions.node} has no process.execve` };
  // Started by fork() with an IPC channel (a supervisor's): execve would close it.
  if (process.channel) return { added: [], given, notApplied: 'started with an IPC channel, which a restart would close' };
  execve.call(process, process.execPath, [process.execPath, ...process.execArgv, ...flags, ...process.argv.slice(1)], {
    ...process.env,
    ...Object.fromEntries(env.map((e) => e.split('='))),
    [ADDED]: added.join(' '),
  });
  throw new Error('unreachable: process.execve returned');
}

/** For cluster.setupPrimary and cluster.fork: Node's flags and the mark for a worker, the user's own flags kept. */
export function workerLaunch(server: ProcessSizing): { execArgv: string[]; env: Record<string, string> } {
  const flags = heapFlags(server, applied.given);
  const execArgv = [...process.execArgv.filter((arg) => !applied.added.includes(arg)), ...flags];
  // MALLOC_ARENA_MAX is in the primary's environment already: the workers inherit it.
  return { execArgv, env: { [ADDED]: [...flags, ...applied.added.filter((a) => !a.startsWith('--'))].join(' ') } };
}

const MIB = 1024 * 1024;

/** The log line: the limit, where it came from, and what this process runs with (`more`: a command's own settings). */
export function memoryReport(
  config: Pick<AppConfig, 'memory' | 'workers' | 'recordCacheSize' | 'keyCacheSize' | 'rebuildRowids'>,
  role: 'primary' | 'server',
  more: string[] = [],
): string {
  const { limit, perProcessMiB } = config.memory;
  // Each heap flag in effect and whose it is; none: V8's own.
  const flag = (name: string) => {
    const sized = applied.added.find((a) => a.startsWith(`--${name}=`));
    if (sized) return `${sized} sized`;
    const pattern = new RegExp(`^--${name.replace(/-/g, '[-_]')}(=|$)`);
    const yours = [...nodeOptionsWords(), ...process.execArgv].filter((a) => pattern.test(a)).pop();
    return yours ? `${yours} yours` : undefined;
  };
  const heap = [flag('max-old-space-size'), flag('max-semi-space-size')].filter(Boolean).join(', ');
  const arenas = process.env.MALLOC_ARENA_MAX
    ? `MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}${applied.added.some((a) => a.startsWith('MALLOC_ARENA_MAX=')) ? '' : ' (yours)'}`
    : undefined;
  const setting = (name: string, value: number) => `${name}=${value}${process.env[name] ? ' (yours)' : ''}`;
  const parts = [
    limit
      ? `limit ${Math.round(limit.bytes / MIB)} MiB (${limit.source === 'MEMORY_LIMIT' ? 'MEMORY_LIMIT' : "the container's cgroup"})`
      : 'no limit (no MEMORY_LIMIT, no cgroup limit)',
    limit && config.workers > 1 ? `${perProcessMiB} MiB for each of ${config.workers} workers` : undefined,
    `${role === 'primary' ? "the primary's " : ''}heap limit ${Math.round(getHeapStatistics().heap_size_limit / MIB)} MiB${heap ? ` (${heap})` : ''}`,
    arenas,
    ...(role === 'server'
      ? [setting('RECORD_CACHE_SIZE', config.recordCacheSize), setting('KEY_CACHE_SIZE', config.keyCacheSize), setting('REBUILD_ROWIDS', config.rebuildRowids)]
      : []),
    ...more,
    applied.notApplied ? `heap flags and MALLOC_ARENA_MAX not applied: ${applied.notApplied}` : undefined,
  ];
  return `Memory: ${parts.filter(Boolean).join('; ')}`;
}
