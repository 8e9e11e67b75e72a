import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(__dirname, '..', '..', 'dist', 'cli.js');
const WAIT_MS = 60_000;

/** CLIs still running when a test file ends are killed, so a failed test cannot hang Jest. */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

export interface CliRun {
  process: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stderr matches the pattern (progress and notices go there). */
  waitForStderr(pattern: RegExp): Promise<void>;
  /** Resolves with the exit code, or the signal's name when killed by one. */
  exited: Promise<number | string>;
}

/**
 * The built CLI (dist/cli.js) as a real child process on the data directory, stdout and stderr
 * piped (not a TTY); `env` adds settings (stores) to the environment.
 */
export function spawnCli(args: string[], dataDir: string, env: NodeJS.ProcessEnv = {}): CliRun {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let ended = false;
  const exited = new Promise<number | string>((resolve) =>
    child.on('close', (code, signal) => {
      running.delete(child);
      ended = true;
      resolve(code ?? signal!);
    }),
  );
  const waitForStderr = (pattern: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now();
      const timer = setInterval(() => {
        if (pattern.test(stderr)) {
          clearInterval(timer);
          resolve();
        } else if (ended || Date.now() - started > WAIT_MS) {
          clearInterval(timer);
          reject(new Error(`${pattern} never reached stderr:\n${stderr}\nstdout:\n${stdout}`));
        }
      }, 20);
    });
  return { process: child, stdout: () => stdout, stderr: () => stderr, waitForStderr, exited };
}

/** Runs the CLI to its end. */
export async function runCli(args: string[], dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const run = spawnCli(args, dataDir, env);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}
