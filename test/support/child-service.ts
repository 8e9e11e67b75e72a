import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ACCOUNTS } from './test-app';

const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');
const WAIT_MS = 30_000;

/** Children still running when a test file ends are killed, so a failed test cannot hang Jest. */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

export interface ChildService {
  url: string;
  process: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves with the first match of the pattern in the output, waiting for it to be printed. */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** The built service (dist/, made by `npm test`'s build step) as a real child process, once it listens. */
export async function startChildService(dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<ChildService> {
  const { child, output, waitForOutput, exited } = spawnService(dataDir, env);
  try {
    const [, url] = await waitForOutput(/Listening on (http:\/\/\S+)/);
    return { url: url.replace('localhost', '127.0.0.1'), process: child, output, waitForOutput, exited };
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

function spawnService(dataDir: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      NO_COLOR: '1',
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      ACCESS_TOKENS: [...ACCOUNTS].map(([t, a]) => `${t}:${a}`).join(','),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
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
