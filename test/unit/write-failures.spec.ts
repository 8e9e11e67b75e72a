import { StoreFullError, StoreUnavailableError, sqliteFailure } from '../../src/storage/store-unavailable.error';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DISK_PROBE_EVERY_MS, diskProbe, WRITE_FAILURE_REMEMBERED_MS, WriteFailures } from '../../src/storage/write-failures';
import { siblings } from '../../src/instance';

describe('WriteFailures, for readiness', () => {
  const failing = (error: Error) => () => Promise.reject(error);
  let writes: WriteFailures;
  beforeEach(() => (writes = new WriteFailures()));
  afterEach(() => writes.close());

  it('notes a store whose write found it unavailable or full, until a write to it succeeds', async () => {
    await expect(writes.watch('event store', failing(new StoreFullError('SQLite', 'SQLITE_FULL')))).rejects.toBeInstanceOf(StoreFullError);
    await expect(writes.watch('read store', failing(new StoreUnavailableError('MongoDB', 'down')))).rejects.toThrow('MongoDB is unreachable: down');
    expect(await writes.current()).toEqual([
      { store: 'event store', full: true, secondsAgo: 0 },
      { store: 'read store', full: false, secondsAgo: 0 },
    ]);
    await expect(writes.watch('event store', async () => 'appended')).resolves.toBe('appended');
    expect((await writes.current()).map((f) => f.store)).toEqual(['read store']);
  });

  it('tells the other workers of a failure again once one of them told that its writes succeed', async () => {
    // The sibling news of WORKERS=N, caught here: what this worker tells, and a listener to tell it news.
    const listeners = new Map<string, (details: string[]) => void>();
    const told: string[] = [];
    const hear = jest.spyOn(siblings, 'hear').mockImplementation((news, listener) => (listeners.set(news, listener), () => undefined));
    const tell = jest.spyOn(siblings, 'tell').mockImplementation((news, details = []) => void told.push([news, ...details].join(' ')));
    try {
      const worker = new WriteFailures();
      const fail = () => worker.watch('event store', failing(new StoreUnavailableError('SQLite', 'SQLITE_BUSY'))).catch(() => undefined);
      await fail();
      await fail(); // within the half memory: not told again
      expect(told).toEqual(['write-failed event store unavailable']);
      // Another worker wrote: both are ready; this worker's next failure must reach it.
      listeners.get('wrote')!(['event store']);
      expect(await worker.current()).toEqual([]);
      await fail();
      expect(told).toEqual(['write-failed event store unavailable', 'write-failed event store unavailable']);
      worker.close();
    } finally {
      hear.mockRestore();
      tell.mockRestore();
    }
  });

  it('does not count a write refused for its own sake (a conflict, a stale revision)', async () => {
    await expect(writes.watch('event store', failing(new Error('wrong expected revision')))).rejects.toThrow();
    expect(await writes.current()).toEqual([]);
  });

  it('forgets a failure after WRITE_FAILURE_REMEMBERED_MS with no write since: one entry per store, whatever their number', async () => {
    for (let i = 0; i < 1000; i++) await writes.watch('event store', failing(new StoreFullError('SQLite', 'ENOSPC'))).catch(() => undefined);
    const now = Date.now();
    expect(await writes.current(now + WRITE_FAILURE_REMEMBERED_MS - 1000)).toEqual([{ store: 'event store', full: true, secondsAgo: 29 }]);
    expect(await writes.current(now + WRITE_FAILURE_REMEMBERED_MS + 1000)).toEqual([]);
  });
});

describe('WriteFailures with a probe of the disk', () => {
  const full = () => Promise.reject(new StoreFullError('SQLite', 'SQLITE_FULL'));
  /** A probe that fails while `diskFull`, counting its writes. */
  function probe(stores: ('event store' | 'read store' | 'key store')[]) {
    const disk = { full: true, writes: 0 };
    const write = () => (disk.writes++, disk.full ? Promise.reject(Object.assign(new Error('no space'), { code: 'ENOSPC' })) : Promise.resolve());
    return { disk, probe: { stores, write } };
  }

  it('clears a store full on the probed disk once a write there succeeds, with no write to the store', async () => {
    const { disk, probe: p } = probe(['event store', 'key store']);
    const writes = new WriteFailures(p);
    try {
      await writes.watch('event store', full).catch(() => undefined);
      await writes.watch('read store', full).catch(() => undefined); // not on the probed disk (a server's)
      const now = Date.now();
      expect((await writes.current(now)).map((f) => f.store)).toEqual(['event store', 'read store']);
      expect(disk.writes).toBe(1);
      // Space is back: the next probe clears the event store; within DISK_PROBE_EVERY_MS no probe is tried.
      disk.full = false;
      expect((await writes.current(now + DISK_PROBE_EVERY_MS - 1)).map((f) => f.store)).toEqual(['event store', 'read store']);
      expect(disk.writes).toBe(1);
      expect((await writes.current(now + DISK_PROBE_EVERY_MS)).map((f) => f.store)).toEqual(['read store']);
      expect(disk.writes).toBe(2);
      // Nothing full on the disk: no probe.
      await writes.current(now + 10 * DISK_PROBE_EVERY_MS);
      expect(disk.writes).toBe(2);
    } finally {
      writes.close();
    }
  });

  it('probes once for callers asking together, and keeps a store that failed while the probe ran', async () => {
    let finish!: () => void;
    let probes = 0;
    const writes = new WriteFailures({ stores: ['event store'], write: () => (probes++, new Promise<void>((resolve) => (finish = resolve))) });
    try {
      await writes.watch('event store', full).catch(() => undefined);
      const began = Date.now();
      const asked = [writes.current(began), writes.current(began + 5 * DISK_PROBE_EVERY_MS)];
      await new Promise((r) => setImmediate(r));
      expect(probes).toBe(1);
      // A write fails while the probe writes: it is newer than what the probe can tell.
      await writes.watch('event store', full).catch(() => undefined);
      finish();
      const answers = await Promise.all(asked);
      expect(answers.map((a) => a.map((f) => f.store))).toEqual([['event store'], ['event store']]);
    } finally {
      writes.close();
    }
  });

  it('writes, syncs and deletes a file of its own in the directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-probe-'));
    try {
      await diskProbe(dir, ['event store']).write();
      expect(readdirSync(dir)).toEqual([]);
      await expect(diskProbe(join(dir, 'missing'), ['event store']).write()).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sqliteFailure', () => {
  it.each(['SQLITE_FULL', 'ENOSPC', 'EDQUOT'])('makes %s a StoreFullError, which the HTTP layer answers 503', (code) => {
    const translated = sqliteFailure(Object.assign(new Error('database or disk is full'), { code }));
    expect(translated).toBeInstanceOf(StoreFullError);
    expect(translated).toBeInstanceOf(StoreUnavailableError);
    expect((translated as Error).message).toBe(`SQLite cannot write: no space left on its disk (${code})`);
  });

  it.each(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT'])('makes %s (locked past the busy timeout) the store unavailable, not full', (code) => {
    const translated = sqliteFailure(Object.assign(new Error('database is locked'), { code }));
    expect(translated).toBeInstanceOf(StoreUnavailableError);
    expect(translated).not.toBeInstanceOf(StoreFullError);
    expect((translated as Error).message).toBe(`SQLite is unreachable: its file stayed locked past the busy timeout (${code})`);
  });

  it('leaves any other error as it is', () => {
    const constraint = Object.assign(new Error('UNIQUE constraint failed: events.event_id'), { code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(sqliteFailure(constraint)).toBe(constraint);
    expect(sqliteFailure(undefined)).toBeUndefined();
  });
});
