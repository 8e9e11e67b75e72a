import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * WORKERS=N: what one worker tells (`siblings.tell`), every other worker hears, through the
 * primary's relay, and the teller does not. Real processes: a primary and three workers of
 * node:cluster, running the built module.
 */
describe('news between the workers of a cluster', () => {
  const built = join(__dirname, '..', '..', 'dist', 'instance.js');
  const script = `
    const cluster = require('node:cluster');
    const { siblings, relaySiblingNews } = require(${JSON.stringify(built)});
    if (cluster.isPrimary) {
      relaySiblingNews();
      const workers = ['teller', 'hearer', 'hearer'].map((role) => cluster.fork({ ROLE: role }));
      const heard = [];
      let ready = 0;
      cluster.on('message', (worker, message) => {
        if (message === 'ready' && ++ready === workers.length) workers[0].send('go');
        if (message && message.heard) heard.push(message.heard);
        if (heard.length === 2) {
          // Anything else told would arrive before the teller's own 'done'.
          workers[0].send('finish');
        }
        if (message === 'done') {
          console.log(heard.sort().join(','));
          for (const w of workers) w.kill();
        }
      });
    } else {
      const role = process.env.ROLE;
      siblings.hear('appended', (streams) => process.send({ heard: role + ' heard appended to ' + streams.join('+') }));
      siblings.hear('folded', () => process.send({ heard: role + ' heard folded' }));
      process.on('message', (message) => {
        if (message === 'go') siblings.tell('appended', ['customer-1', 'profile-2']);
        if (message === 'finish') setTimeout(() => process.send('done'), 200);
      });
      process.send('ready');
    }`;

  it('reach every other worker with the streams they name, and not the teller', () => {
    // A file, not -e: the workers run the primary's script.
    const dir = mkdtempSync(join(tmpdir(), 'sibling-news-'));
    writeFileSync(join(dir, 'cluster.js'), script);
    const run = spawnSync(process.execPath, [join(dir, 'cluster.js')], { encoding: 'utf8', timeout: 30_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('hearer heard appended to customer-1+profile-2,hearer heard appended to customer-1+profile-2\n');
  });

  it('are neither told nor heard outside a cluster worker', () => {
    const run = spawnSync(
      process.execPath,
      [
        '-e',
        `const { siblings } = require(${JSON.stringify(built)}); siblings.hear('appended', () => console.log('heard')); siblings.tell('appended'); console.log('alone');`,
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('alone\n');
  });
});
