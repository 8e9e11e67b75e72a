import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { liveStoreEnv, TEST_WORKERS } from './stores';
import { ACCOUNTS } from './test-app';

const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');
const WAIT_MS = 30_000;

/**
 * Children still running when a test file ends are stopped, so a failed test cannot hang Jest: with
 * SIGTERM first, as this hook may run before the afterAll that stops them itself (startTestApp's,
 * which then finds them stopped cleanly), then SIGKILL for one that does not exit.
 */
const running = new Set<ChildProcess>();
afterAll(async () => {
  await Promise.all(
    [...running].map((child) => {
      const exited = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGKILL'), WAIT_MS);
      return exited.finally(() => clearTimeout(kill));
    }),
  );
}, WAIT_MS + 5_000);

export interface ChildService {
  url: string;
  process: ChildProcess;
  /** kill -9 of the service: its process and, with WORKERS, every worker at the same instant. */
  crash(): void;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves with the first match of the pattern in the output, waiting for it to be printed. */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  /** The exit code, once the process (and every worker, which shares its output pipes) has exited and its output is all read. */
  exited: Promise<number | null>;
}

/**
 * The built service (dist/, made by `npm test`'s build step) as a real child process, with
 * WORKERS=TEST_WORKERS unless `env` says WORKERS, on a port of its own choosing (no PORT in `env`, or
 * 0: a port picked beforehand could be taken meanwhile). It is ready once every worker prints its address.
 */
export async function startChildService(dataDir: string, env: NodeJS.ProcessEnv = {}, command: Command = SERVICE): Promise<ChildService> {
  const { child, output, waitForOutput, exited } = spawnService(dataDir, env, command);
  try {
    const url = (await waitForOutput(/Listening on (http:\/\/\S+)/))[1].replace('localhost', '127.0.0.1');
    const workers = Number(env.WORKERS ?? TEST_WORKERS) || 1;
    if (workers > 1) await waitForOutput(new RegExp(`(Listening on[^]*){${workers}}`));
    return { url, process: child, crash: () => process.kill(-child.pid!, 'SIGKILL'), output, waitForOutput, exited };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

/** The built service started as startChildService does, for a start that is expected to fail: its exit code and output. */
export async function runFailingStart(dataDir: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const { output, exited } = spawnService(dataDir, env);
  const code = await exited;
  return { code, output: output() };
}

/** What startChildService runs, and in which folder: the built service itself unless told otherwise (`npm start`, say). */
export interface Command {
  file: string;
  args: string[];
  cwd?: string;
}

/** What every service a test starts runs with: its data in `dataDir`, on a port of its own choosing, on this machine only. */
export const baseEnv = (dataDir: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  NO_COLOR: '1',
  DATA_DIR: dataDir,
  // In the temp directory, which the test removes (by default it is beside DATA_DIR).
  ERASURE_LOG: join(dataDir, 'erasures.ndjson'),
  PORT: '0',
  HOST: '127.0.0.1',
});

const SERVICE: Command = { file: process.execPath, args: [MAIN] };

function spawnService(dataDir: string, env: NodeJS.ProcessEnv, command: Command = SERVICE) {
  const child = spawn(command.file, command.args, {
    cwd: command.cwd,
    env: {
      ...baseEnv(dataDir),
      ACCESS_TOKENS: [...ACCOUNTS].map(([t, a]) => `${t}:${a}`).join(','),
      ...liveStoreEnv(),
      ...(TEST_WORKERS ? { WORKERS: String(TEST_WORKERS) } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, so that crash() reaches the workers too.
    detached: true,
  });
  running.add(child);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  let exitCode: number | null | undefined;
  // 'close' rather than 'exit': by then everything the process printed has been read.
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      running.delete(child);
      exitCode = code;
      resolve(code);
    }),
  );

  const waitForOutput = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const started = Date.now();
      const timer = setInterval(() => {
        const match = output.match(pattern);
        if (match) {
          clearInterval(timer);
          resolve(match);
        } else if (exitCode !== undefined || Date.now() - started > WAIT_MS) {
          clearInterval(timer);
          reject(new Error(`${pattern} was never printed (exit code ${exitCode}):\n${output}`));
        }
      }, 20);
    });

  return { child, output: () => output, waitForOutput, exited };
}
