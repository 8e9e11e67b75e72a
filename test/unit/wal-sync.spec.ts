import { spawn, spawnSync } from 'node:child_process';
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkpointAndTruncate, openSqliteDatabase, SqliteDatabase, WalSync } from '../../src/storage/sqlite-database';

describe('WalSync on a durable SQLite connection', () => {
  let dir: string;
  let db: SqliteDatabase;
  let wal: WalSync;
  const file = (suffix = '') => join(dir, `store.sqlite${suffix}`);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'wal-sync-'));
    db = openSqliteDatabase(file(), { durable: true });
    wal = WalSync.forDurable(db, () => 1)!;
    db.exec('CREATE TABLE notes (text TEXT)');
  });

  afterEach(async () => {
    await wal.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const inDatabaseFile = (text: string) => readFileSync(file()).includes(text);

  it('closes its file once, however often it is closed: the descriptor number may belong to another file by then', async () => {
    await wal.close();
    // The lowest free descriptor: the one the WAL file had, most likely; a second close would close this file.
    const other = openSync(file('.other'), 'w');
    try {
      await wal.close();
      expect(() => fstatSync(other)).not.toThrow();
    } finally {
      closeSync(other);
    }
  });

  it('copies the WAL into the database file in its own thread, with no checkpoint by the connection', async () => {
    db.pragma('wal_autocheckpoint = 0'); // the connection never checkpoints: only the thread can
    const marker = `marker-${Date.now()}-${Math.random()}`;
    db.prepare('INSERT INTO notes VALUES (?)').run(marker);
    await wal.upTo(1);
    expect(inDatabaseFile(marker)).toBe(false); // committed to the WAL only
    const deadline = Date.now() + 10_000;
    while (!inDatabaseFile(marker) && Date.now() < deadline) await sleep(20);
    expect(inDatabaseFile(marker)).toBe(true);
  });

  it('keeps the process alive until its thread has ended, so a caller awaiting close() goes on afterwards', () => {
    // The built module, in a process of its own: a process whose only work left is awaiting close()
    // would otherwise end, silently and with status 0, before close() resolved.
    const built = join(__dirname, '..', '..', 'dist', 'storage', 'sqlite-database.js');
    const script = `
      const { openSqliteDatabase, WalSync } = require(${JSON.stringify(built)});
      const db = openSqliteDatabase(${JSON.stringify(join(dir, 'other.sqlite'))}, { durable: true });
      WalSync.forDurable(db, () => 0).close().then(() => { db.close(); console.log('closed'); });`;
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('closed\n');
  });

  it('starts the log over under steady writes, long before a commit would checkpoint it itself', async () => {
    // A commit lands during each of the thread's checkpoints, so the thread alone never leaves the
    // log wholly copied, and the log would grow to the commits' own checkpoint (about 165 MB).
    const insert = db.prepare('INSERT INTO notes VALUES (?)');
    const row = 'x'.repeat(16_000); // five pages
    let largest = 0;
    for (let n = 0; n < 3_000; n++) {
      insert.run(row);
      if (n % 50 === 0) largest = Math.max(largest, statSync(file('-wal')).size);
      await sleep(1); // steady, over several of the thread's rounds
    }
    expect(largest).toBeLessThan(36 * 1024 * 1024); // 3,000 rows make a log of over 60 MB
  });

  it('starts the log over while another process writes steadily, its commits waiting out the copy', async () => {
    db.prepare('INSERT INTO notes VALUES (?)').run('first'); // the table, before the other process writes
    const script = `
      const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(file())});
      db.pragma('busy_timeout = 5000');
      db.pragma('synchronous = NORMAL');
      db.pragma('wal_autocheckpoint = 0'); // only the thread checkpoints
      const insert = db.prepare('INSERT INTO notes VALUES (?)');
      const row = 'x'.repeat(16000);
      let n = 0;
      const timer = setInterval(() => { insert.run(row); if (++n === 3000) { clearInterval(timer); db.close(); } }, 1);`;
    const writer = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    writer.stderr.on('data', (chunk) => (errors += chunk));
    const exited = new Promise<number | null>((resolve) => writer.once('exit', resolve));
    let largest = 0;
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      largest = Math.max(largest, statSync(file('-wal')).size);
      await sleep(20);
    }
    expect(await exited).toBe(0);
    expect(errors).toBe('');
    expect(largest).toBeLessThan(36 * 1024 * 1024); // 3,000 rows make a log of over 60 MB
  });

  it('truncates the WAL beside the checkpoint thread, waiting out a checkpoint it is running', async () => {
    const insert = db.prepare('INSERT INTO notes VALUES (?)');
    for (let round = 0; round < 20; round++) {
      for (let n = 0; n < 200; n++) insert.run(`row ${round}-${n} ${'x'.repeat(500)}`);
      await checkpointAndTruncate(db);
      expect(readFileSync(file('-wal')).length).toBe(0);
      await sleep(Math.random() * 300); // lands at various points of the thread's 250 ms round
    }
  });
});
