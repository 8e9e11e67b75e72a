import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const DIST = join(__dirname, '..', '..', 'dist', 'erasure');

/**
 * The thread runs only as built (dist/, made by `npm test`'s build step), so this drives it in a
 * process of its own, where nothing else holds the process open: as in the CLI.
 */
describe('OpeningThread, as built', () => {
  it('holds the process open until close() has ended the thread, with an answer still on its way', async () => {
    // The second batch's answer is posted while the main thread is busy, so it arrives after close()
    // began. It once unreferenced the thread there, and the process ended with code 0 before close()
    // returned: an interrupted CLI rebuild then exited 0, not 130.
    const script = `
      const { OpeningThread } = require(${JSON.stringify(join(DIST, 'opening-thread'))});
      const { seal } = require(${JSON.stringify(join(DIST, 'data-keys'))});
      const key = require('node:crypto').randomBytes(32);
      const contexts = Array.from({ length: 10 }, (_, i) => 'event-' + i);
      const sealed = contexts.map((c) => seal(key, '["Ada"]', c));
      const thread = new OpeningThread();
      (async () => {
        await thread.open(sealed, contexts, contexts.map(() => key));
        thread.open(sealed, contexts, contexts.map(() => key)).catch(() => undefined);
        for (const until = Date.now() + 20; Date.now() < until; );
        await thread.close();
        process.stdout.write('closed');
        process.exitCode = 3;
      })();
    `;
    const run = promisify(execFile)(process.execPath, ['-e', script]);
    await expect(run).rejects.toMatchObject({ code: 3, stdout: 'closed' });
  });
});
