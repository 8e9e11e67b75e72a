import { fork } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { baseEnv, runFailingStart, startChildService } from '../support/child-service';
import { ACCOUNTS, makeDataDir } from '../support/test-app';

const TOKEN = [...ACCOUNTS.keys()][0];
const MAIN = join(__dirname, '..', '..', 'dist', 'main.js');

/** What the kernel says a process runs: its command line and environment (after an execve, the new image's). */
function proc(pid: number): { args: string[]; env: string[] } {
  const read = (file: string) => readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
  return { args: read('cmdline'), env: read('environ') };
}

const memoryLine = (output: string, context: string) =>
  output
    .split('\n')
    .filter((line) => line.includes(`"context":"${context}"`) && line.includes('"msg":"Memory: '))
    .map((line) => JSON.parse(line) as { msg: string; pid: number });

describe('memory sized to MEMORY_LIMIT, with no flag', () => {
  let dataDir: string;
  beforeEach(() => (dataDir = makeDataDir()));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('MEMORY_LIMIT=256m: the process restarts itself in place with the 256 MiB heap flags and arenas, logs them, and serves', async () => {
    const service = await startChildService(dataDir, { WORKERS: '1', MEMORY_LIMIT: '256m' });
    try {
      await request(service.url).get('/v1/customers').set('Authorization', `Bearer ${TOKEN}`).expect(200);
      const [line] = memoryLine(service.output(), 'Main');
      // V8's heap limit as the process reads it (v8.getHeapStatistics): old generation 96 + three 8 MiB semi-spaces.
      expect(line.msg).toBe(
        'Memory: limit 256 MiB (MEMORY_LIMIT); heap limit 120 MiB (--max-old-space-size=96 sized, --max-semi-space-size=8 sized); ' +
          'MALLOC_ARENA_MAX=2; RECORD_CACHE_SIZE=2000; KEY_CACHE_SIZE=2000; REBUILD_ROWIDS=250000',
      );
      // The same process (its pid kept), now running with the flags and the environment glibc reads at start.
      expect(line.pid).toBe(service.process.pid);
      const { args, env } = proc(service.process.pid!);
      expect(args).toEqual([process.execPath, '--max-semi-space-size=8', '--max-old-space-size=96', expect.stringMatching(/dist\/main\.js$/)]);
      expect(env).toContain('MALLOC_ARENA_MAX=2');
      expect(env.some((e) => e.startsWith('SERVICE_MEMORY_SIZED='))).toBe(true);
    } finally {
      service.process.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    }
  });

  it("keeps the user's own heap flag and MALLOC_ARENA_MAX, says so, and sizes the rest; with WORKERS, each worker gets its share", async () => {
    const service = await startChildService(dataDir, {
      WORKERS: '2',
      MEMORY_LIMIT: '1g',
      NODE_OPTIONS: '--max-old-space-size=200',
      MALLOC_ARENA_MAX: '4',
      RECORD_CACHE_SIZE: '100',
    });
    try {
      await service.waitForOutput(/2 workers serve/);
      const [primary] = memoryLine(service.output(), 'Primary');
      expect(primary.msg).toBe(
        'Memory: limit 1024 MiB (MEMORY_LIMIT); 480 MiB for each of 2 workers; ' +
          "the primary's heap limit 206 MiB (--max-old-space-size=200 yours, --max-semi-space-size=2 sized); MALLOC_ARENA_MAX=4 (yours)",
      );
      const workers = memoryLine(service.output(), 'Main');
      expect(workers).toHaveLength(2);
      for (const worker of workers) {
        // 480 MiB: semi-spaces of 8 MiB (a power of two, 1/32), the old generation the user's; caches 2,000 per 256 MiB.
        expect(worker.msg).toBe(
          'Memory: limit 1024 MiB (MEMORY_LIMIT); 480 MiB for each of 2 workers; heap limit 224 MiB (--max-old-space-size=200 yours, --max-semi-space-size=8 sized); ' +
            'MALLOC_ARENA_MAX=4 (yours); RECORD_CACHE_SIZE=100 (yours); KEY_CACHE_SIZE=3750; REBUILD_ROWIDS=468750',
        );
        expect(proc(worker.pid).args.filter((a) => a.startsWith('--'))).toEqual(['--max-semi-space-size=8']);
      }
      expect(proc(service.process.pid!).args.filter((a) => a.startsWith('--'))).toEqual(['--max-semi-space-size=2']);
    } finally {
      service.process.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    }
  });

  it('started by fork() with an IPC channel, which a restart would close, keeps it: sizes the caches and says the flags are not applied', async () => {
    const child = fork(MAIN, [], {
      env: { ...baseEnv(dataDir), MEMORY_LIMIT: '256m' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      while (!output.includes('"msg":"Memory: ')) {
        if (child.exitCode !== null) throw new Error(output);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(child.connected).toBe(true);
      expect(memoryLine(output, 'Main')[0].msg).toMatch(
        /; RECORD_CACHE_SIZE=2000; KEY_CACHE_SIZE=2000; REBUILD_ROWIDS=250000; heap flags and MALLOC_ARENA_MAX not applied: started with an IPC channel, which a restart would close$/,
      );
      expect(proc(child.pid!).args.filter((a) => a.startsWith('--'))).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('refuses a MEMORY_LIMIT it cannot read, naming the variable, before starting anything', async () => {
    const { code, output } = await runFailingStart(dataDir, { MEMORY_LIMIT: '256 megs' });
    expect({ code, output }).toEqual({
      code: 1,
      output: 'Configuration error: MEMORY_LIMIT must be bytes or a number with k, m or g (such as 256m or 1g); got "256 megs"\n',
    });
  });
});
