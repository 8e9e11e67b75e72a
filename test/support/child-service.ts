import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ACCOUNTS } from './test-app';

const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');
const START_TIMEOUT_MS = 30_000;

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
  exited: Promise<number | null>;
}

/** The built service (dist/, made by `npm test`'s build step) as a real child process. */
export async function startChildService(dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<ChildService> {
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
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service did not start:\n${output}`));
    }, START_TIMEOUT_MS);
    const look = () => {
      const match = output.match(/Listening on (http:\/\/[^\s]+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1].replace('localhost', '127.0.0.1'));
      }
    };
    child.stdout.on('data', look);
    exited.then(() => reject(new Error(`service exited:\n${output}`)));
  });
  return { url, process: child, output: () => output, exited };
}
