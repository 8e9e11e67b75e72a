import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const DIST = join(__dirname, '..', '..', 'dist', 'sealing');

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

  it('reads the keys from a SQLite key store itself: a key opens, a destroyed one and one the store has not give null, the latter named absent; later writes are seen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'opening-thread-'));
    const script = `
      const { OpeningThread } = require(${JSON.stringify(join(DIST, 'opening-thread'))});
      const { seal } = require(${JSON.stringify(join(DIST, 'data-keys'))});
      const { SqliteKeyStore } = require(${JSON.stringify(join(DIST, '..', 'key-store', 'sqlite-key-store'))});
      const { openSqliteDatabase } = require(${JSON.stringify(join(DIST, '..', 'storage', 'sqlite-database'))});
      const file = ${JSON.stringify(join(dir, 'keys.sqlite'))};
      (async () => {
        const store = new SqliteKeyStore(openSqliteDatabase(file, { durable: true }));
        const ids = Array.from({ length: 1500 }, (_, i) => 'customer-' + i);
        const keys = await Promise.all(ids.map((id) => store.obtain(id, { isNew: true })));
        await store.destroy('customer-1', 'acc');
        const sealed = ids.map((id, i) => seal(keys[i], JSON.stringify([id]), 'event-' + i));
        const thread = new OpeningThread();
        // Every key twice, and one the store does not have.
        const keyIds = [...ids, 'customer-none'];
        const keyOf = Int32Array.from([...ids.map((_, i) => i), ...ids.map((_, i) => i), ids.length]);
        const contexts = [...ids.map((_, i) => 'event-' + i), ...ids.map((_, i) => 'event-' + i), 'event-0'];
        const answer = await thread.openReadingKeys(file, [...sealed, ...sealed, sealed[0]], contexts, keyIds, keyOf);
        // After the thread's first read: a key destroyed (the log truncated), then one made (in the log only).
        await store.destroy('customer-2', 'acc');
        const made = await store.obtain('customer-new', { isNew: true });
        const later = await thread.openReadingKeys(file, [seal(made, '["new"]', 'event-new'), sealed[2]], ['event-new', 'event-2'], ['customer-new', 'customer-2'], Int32Array.from([0, 1]));
        await thread.close();
        await store.close();
        process.stdout.write(JSON.stringify({ answer, later }));
      })();
    `;
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { maxBuffer: 1 << 24 });
      type Answer = { opened: (string | null)[]; absent: string[] };
      const { answer, later } = JSON.parse(stdout) as { answer: Answer; later: Answer };
      const expected = Array.from({ length: 1500 }, (_, i) => (i === 1 ? null : JSON.stringify([`customer-${i}`])));
      expect(answer.opened).toEqual([...expected, ...expected, null]);
      expect(answer.absent).toEqual(['customer-none']);
      expect(later).toEqual({ opened: ['["new"]', null], absent: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  // Counted in the bytes the process reads (Linux's /proc/self/io).
  (existsSync('/proc/self/io') ? it : it.skip)(
    'reads the keys of records made one after another with the rows that follow, not one lookup by id each (bytes read counted)',
    async () => {
      // Keys made in a record's creation order, read back in that order as a rebuild reads them, 1,000
      // at a time. Looked up one by one through the id index (random ids, a 256 KiB page cache), they
      // cost a page read for most keys; read as the rows that follow one another, a few pages per 1,000.
      // The key store is closed first: its checkpoint thread reads too.
      const dir = mkdtempSync(join(tmpdir(), 'opening-thread-'));
      const script = `
      const { readFileSync } = require('node:fs');
      const { randomUUID } = require('node:crypto');
      const { OpeningThread } = require(${JSON.stringify(join(DIST, 'opening-thread'))});
      const { seal } = require(${JSON.stringify(join(DIST, 'data-keys'))});
      const { SqliteKeyStore } = require(${JSON.stringify(join(DIST, '..', 'key-store', 'sqlite-key-store'))});
      const { openSqliteDatabase } = require(${JSON.stringify(join(DIST, '..', 'storage', 'sqlite-database'))});
      const file = ${JSON.stringify(join(dir, 'keys.sqlite'))};
      const bytesRead = () => Number(/rchar: (\\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
      (async () => {
        const store = new SqliteKeyStore(openSqliteDatabase(file, { durable: true }));
        const ids = Array.from({ length: 20000 }, () => 'customer-' + randomUUID());
        const keys = await Promise.all(ids.map((id) => store.obtain(id, { isNew: true })));
        await store.close();
        const thread = new OpeningThread();
        const read = (from, to) => {
          const batch = ids.slice(from, to);
          const contexts = batch.map((_, i) => 'event-' + (from + i));
          const sealed = batch.map((id, i) => seal(keys[from + i], JSON.stringify([id]), contexts[i]));
          return thread.openReadingKeys(file, sealed, contexts, batch, Int32Array.from(batch.keys()));
        };
        await read(0, 1); // the thread started, its connection open
        const before = bytesRead();
        let opened = 0;
        for (let from = 0; from < ids.length; from += 1000) {
          const answer = await read(from, from + 1000);
          opened += answer.opened.filter((value, i) => value === JSON.stringify([ids[from + i]])).length;
        }
        const bytes = bytesRead() - before;
        await thread.close();
        process.stdout.write(JSON.stringify({ opened, bytes }));
      })();
    `;
      try {
        const { stdout } = await promisify(execFile)(process.execPath, ['-e', script]);
        const { opened, bytes } = JSON.parse(stdout) as { opened: number; bytes: number };
        expect(opened).toBe(20000);
        // Each key looked up by id: about 25 MB read here. Read as the rows that follow: about 2 MB.
        expect(bytes).toBeLessThan(8_000_000);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
