import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ChildService, startChildService } from '../support/child-service';
import { makeDataDir } from '../support/test-app';

const run = promisify(execFile);

/** The first fenced block after `heading` in the page, and the one after it. */
function blocksAfter(page: string, heading: string): [string, string] {
  const text = readFileSync(join(__dirname, '..', '..', 'docs', page), 'utf8');
  const section = text.slice(text.indexOf(`\n${heading}\n`));
  const [, script, , printed] = section.split(/^```.*$/m);
  return [script, printed];
}

/** Ids, times and creation seconds differ from run to run; the rest must be as documented. */
const normalise = (text: string) =>
  text
    .trim()
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g, '<id>')
    .replace(/"created":\d+/g, '"created":<s>')
    .replace(/"occurred":"[^"]+"/g, '"occurred":<t>')
    .replace(/"actor":"[^"]+"/g, '"actor":<a>');

describe('the pages’ shell examples, run as pasted in the directory of a freshly started service', () => {
  let home: string;
  let service: ChildService;
  beforeAll(async () => {
    home = makeDataDir();
    service = await startChildService(join(home, 'data'), { ACCESS_TOKENS: '' });
  });
  afterAll(async () => {
    service.process.kill('SIGTERM');
    await service.exited;
    rmSync(home, { recursive: true, force: true });
  });

  it.each([
    ['the walk-through in docs/api.md', 'api.md', '## Walk-through'],
    ['the history and as-of reads in docs/auditors.md', 'auditors.md', '### Try them'],
  ])('%s: prints what the page shows', async (_, page, heading) => {
    const [script, printed] = blocksAfter(page, heading);
    expect(script).toContain('B=http://localhost:3000/v1');
    // The one change: the address of this test's service instead of port 3000.
    const { stdout, stderr } = await run('bash', ['-e', '-c', script.replaceAll('http://localhost:3000', service.url)], { cwd: home });
    expect(stderr).toBe('');
    expect(normalise(stdout)).toBe(normalise(printed));
  });
});
