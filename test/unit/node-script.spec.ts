import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * scripts/node.sh used as the README says, `export PATH="$(scripts/node.sh N)/bin:$PATH"`, for a
 * Node that cannot be installed. The npm on PATH is a stand-in that fails as npm does for a version
 * the registry lacks, so the test needs no network.
 */
describe('scripts/node.sh', () => {
  let fakeNpm: string;
  beforeAll(() => {
    fakeNpm = mkdtempSync(join(tmpdir(), 'fake-npm-'));
    writeFileSync(
      join(fakeNpm, 'npm'),
      '#!/bin/sh\necho "npm error code ETARGET" >&2\necho "npm error notarget No matching version found for $3." >&2\necho "npm error A complete log of this run can be found in: /tmp/x.log" >&2\nexit 1\n',
    );
    chmodSync(join(fakeNpm, 'npm'), 0o755);
  });
  afterAll(() => rmSync(fakeNpm, { recursive: true, force: true }));

  /** The usage line in bash, then `node --version`: which Node the shell has afterwards. */
  function use(major: string) {
    const { stdout, stderr } = spawnSync('bash', ['--norc', '-c', `export PATH="$(scripts/node.sh ${major})/bin:$PATH"; node --version`], {
      cwd: ROOT,
      env: { PATH: `${fakeNpm}:${dirname(process.execPath)}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    return { node: stdout.trim(), stderr };
  }

  it('says on stderr that a version the registry lacks is not there, exits 1 and leaves the Node on PATH as it was', () => {
    expect(existsSync(join(ROOT, '.node98'))).toBe(false);
    const { status, stdout } = spawnSync(join(ROOT, 'scripts', 'node.sh'), ['98'], {
      env: { PATH: `${fakeNpm}:${dirname(process.execPath)}:/usr/bin:/bin` },
      encoding: 'utf8',
    });
    expect(status).toBe(1);
    // A folder with no Node in it, rather than nothing, which the usage line would turn into /bin.
    expect(stdout).toBe(`${join(ROOT, '.node98')}\n`);
    expect(existsSync(join(ROOT, '.node98'))).toBe(false);

    const { node, stderr } = use('98');
    expect(node).toBe(process.version);
    expect(stderr).toBe(
      [
        `scripts/node.sh: npm could not fetch node-linux-${process.arch}@98 from the npm registry:`,
        'npm error code ETARGET',
        `npm error notarget No matching version found for node-linux-${process.arch}@98.`,
        `scripts/node.sh: nothing installed; the Node on PATH stays ${process.version}`,
        '',
      ].join('\n'),
    );
  });

  it('refuses a version that is not a number, saying what it needs, before asking npm', () => {
    const { node, stderr } = use('abc');
    expect(node).toBe(process.version);
    expect(stderr).toBe(
      `scripts/node.sh: give Node's major version, a number such as 24 or 22 (not "abc")\nscripts/node.sh: nothing installed; the Node on PATH stays ${process.version}\n`,
    );
  });
});
