// The built service, and the load generator, as the benchmarks start them.
import { ChildProcess, fork, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from './load-worker';

export const ROOT = join(__dirname, '..', '..');

/** A process answering HTTP: the service, or one of the yardsticks. */
export interface Service {
  url: string;
  child: ChildProcess;
  output(): string;
  /** The service's WORKERS. */
  workers?: number;
}

/** Node's flags for the service, as `npm start` and `npm run start:prod` give them (package.json). */
export function serviceNodeFlags(): string[] {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  return scripts['start:prod'].split(' ').filter((word) => word.startsWith('--'));
}

/**
 * The service as users run it: its Node flags, logs at info into a file, metrics (always on), rate
 * limits on, raised above the load (one token makes the whole load: counted on every request, never refusing).
 */
export async function startService(
  dataDir: string,
  {
    workers,
    accessTokens,
    env = {},
    nodeFlags = [],
    cgroup,
  }: {
    workers: number;
    accessTokens: string;
    /** More settings, over the ones above. */ env?: Record<string, string>;
    /** More flags for Node, after npm start's (a flag given twice: the later wins), such as --cpu-prof. */ nodeFlags?: string[];
    /** A cgroup's directory (bench/cgroup.ts) the service is started in: its memory limit is the service's container's. */ cgroup?: string;
  },
): Promise<Service & { dataDir: string }> {
  const log = join(dataDir, 'service.log');
  const fd = openSync(log, 'a');
  const command = [
    process.execPath,
    ...serviceNodeFlags(),
    ...(process.env.BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []),
    ...nodeFlags,
    // BENCH_SERVICE_DIST: another build's dist/ (a checkout's, built there), to measure it against this one in turn.
    join(process.env.BENCH_SERVICE_DIST ?? join(ROOT, 'dist'), 'main.js'),
  ];
  // In the cgroup: a shell joins it, then becomes the service (exec: the same pid).
  const [file, ...args] = cgroup ? ['/bin/sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, ...command] : command;
  const child = spawn(file, args, {
    cwd: dataDir,
    env: {
      PATH: process.env.PATH,
      NO_COLOR: '1',
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ACCESS_TOKENS: accessTokens,
      RATE_LIMIT_REQUESTS: '1000000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      WORKERS: String(workers),
      ...env,
    },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  // The log grows by a line per request: read its tail only.
  const output = () => readFileSync(log, 'utf8').slice(-65_536);
  // With several workers, once every one of them listens.
  return { url: await listening(child, output, workers > 1 ? /\d+ workers serve (http:\/\/[^\s"]+)/ : undefined), child, output, workers, dataDir };
}

export function listening(child: ChildProcess, output: () => string, pattern = /Listening on (http:\/\/[^\s"]+)/): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const match = output().match(pattern);
      if (match) {
        clearInterval(timer);
        resolve(match[1].replace('localhost', '127.0.0.1'));
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`${child.spawnargs.join(' ')} exited with ${child.exitCode}:\n${output()}`));
      }
    }, 20);
  });
}

export async function stopService(service: Service): Promise<void> {
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await exited;
}

/** A load run by the generator in a process of its own (bench/load-worker.ts). */
export function load(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = fork(join(__dirname, 'load-worker.js'));
    worker.once('message', (result: LoadResult) => resolve(result));
    worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load worker exited with ${code}`))));
    worker.send(spec);
  });
}

/**
 * The conventional service (bench/conventional/: NestJS + better-sqlite3, no event sourcing) on a
 * fresh data directory, its log lines into a file there as the service's.
 */
export async function startConventional(dataDir: string, accessTokens: string): Promise<Service & { dataDir: string }> {
  const log = join(dataDir, 'conventional.log');
  const fd = openSync(log, 'a');
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []), join(__dirname, 'conventional', 'main.js')], {
    cwd: dataDir,
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, ACCESS_TOKENS: accessTokens },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const output = () => readFileSync(log, 'utf8').slice(-65_536);
  return { url: await listening(child, output), child, output, dataDir };
}
