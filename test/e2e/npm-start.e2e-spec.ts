import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChildService } from '../support/child-service';
import { describeOnSqlite } from '../support/stores';
import { makeDataDir } from '../support/test-app';

const ROOT = join(__dirname, '..', '..');

/** Whether any process of the group is still there: kill(-pgid, 0) fails with ESRCH once none is. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/**
 * `npm start` as an operator runs it, stopped as an operator stops it: `kill` of npm's process id, or
 * a terminal's Ctrl-C (SIGINT to the whole process group). The service must hear it and stop
 * gracefully, with npm exiting after it, leaving no process behind. The package.json is the
 * project's `start` and `start:prod`, word for word, with a `build` that does nothing: the real one
 * would replace dist/ under the suites running beside this one.
 */
describeOnSqlite('npm start', () => {
  let project: string;
  let dataDir: string;
  beforeAll(() => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    project = mkdtempSync(join(tmpdir(), 'npm-start-'));
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'npm-start', private: true, scripts: { build: 'true', start: scripts.start, 'start:prod': scripts['start:prod'] } }),
    );
    symlinkSync(join(ROOT, 'dist'), join(project, 'dist'));
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));
  beforeEach(() => (dataDir = makeDataDir()));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it.each([
    // npm passes SIGINT on as it does SIGTERM: one of the two is enough.
    ['kill -TERM of npm', 'SIGTERM', false],
    // The terminal's SIGINT reaches npm, which passes it on, and the service itself: it must hear both as one.
    ["a terminal's Ctrl-C (SIGINT to npm's process group)", 'SIGINT', true],
  ] as const)('%s stops the service gracefully; npm exits 0 after it and no process is left', async (_, signal, group) => {
    const npm = await startChildService(dataDir, {}, { file: 'npm', args: ['start'], cwd: project });
    const pid = npm.process.pid!;
    try {
      // The service is a process of its own below npm's (npm's own lines carry no pid).
      expect(Number(npm.output().match(/"pid":(\d+)/)![1])).not.toBe(pid);
      const npmExit = once(npm.process, 'exit');
      process.kill(group ? -pid : pid, signal);
      expect((await npmExit)[0]).toBe(0);
      // npm exits after its child: by then the whole group is gone, or something was left behind.
      expect(groupAlive(pid)).toBe(false);
      await npm.exited;
      expect(npm.output()).toMatch(new RegExp(`Shutting down on ${signal}[^]*"msg":"Stopped"`));
    } finally {
      // A service left running would keep the output pipes, and this suite, open.
      if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    }
  });
});
