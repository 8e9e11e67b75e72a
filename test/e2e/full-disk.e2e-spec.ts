/**
 * A full disk, over HTTP: writes answer 503 with Retry-After (never 500), readiness says writes
 * fail, an erased record is gone from reads and lists even while its read model cannot be
 * scrubbed, and the service recovers by itself once space returns: readiness too, with no write.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'supertest';
import type { InstrumentedReadStore } from '../../src/stores/instrumented-stores';
import { READ_STORE, ReadStore } from '../../src/read-store/read-store.port';
import { StoreFullError } from '../../src/storage/store-unavailable.error';
import { WriteFailures } from '../../src/storage/write-failures';
import { uniqueEmail } from '../support/http-assertions';
import { describeOnSqlite, describeUnlessWorkers } from '../support/stores';
import { ACCOUNT_IDS, startTestApp, TestApp, withQuery, withToken } from '../support/test-app';

const STORAGE_503 = 'The service cannot reach its storage right now; try again shortly.';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it holds, for at most `ms`. */
async function eventually(probe: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > until) throw new Error(`not within ${ms} ms`);
    await sleep(100);
  }
}

/** A small tmpfs of its own, where the disk can really fill up: root may mount one (a CI sandbox, a container run as root). */
function mountSmallDisk(): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
}

const disk = mountSmallDisk();
const describeOnSmallDisk = disk
  ? describeOnSqlite
  : (name: string, body: () => void) => describe.skip(`${name} (skipped: cannot mount a tmpfs here, which needs root)`, body);

describeOnSmallDisk('with the data directory on a disk that fills up', () => {
  let t: TestApp;
  const filler = join(disk ?? '', 'filler');

  beforeAll(async () => (t = await startTestApp({ dataDir: join(disk!, 'data'), env: { READ_YOUR_WRITES_TIMEOUT_MS: '1000' } })));
  afterAll(async () => {
    await t?.close();
    execFileSync('umount', [disk!]);
    rmSync(disk!, { recursive: true, force: true });
  });

  /** Takes every byte left on the disk. */
  function fillTheDisk(): void {
    const fd = openSync(filler, 'a');
    const chunk = Buffer.alloc(64 * 1024, 1);
    try {
      for (;;) writeSync(fd, chunk);
    } catch (error) {
      expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      closeSync(fd);
    }
  }

  const create = (email: string) => t.http.post(withToken('customers')).send({ email, name: 'Filling' });

  it('answers 503 with Retry-After while writes fail, says so on /health/ready, and recovers once space returns', async () => {
    await create(uniqueEmail()).expect(201);
    fillTheDisk();

    // The write-ahead log reuses its own space, so a few writes may still fit: none answers 500.
    const answers: Response[] = [];
    const acknowledged: string[] = [];
    for (let i = 0; i < 200 && !answers.some((a) => a.status === 503 && a.body.error.message === STORAGE_503); i++) {
      const email = uniqueEmail();
      const res = await create(email);
      answers.push(res);
      if (res.status === 201) acknowledged.push(email);
    }
    for (const res of answers) {
      expect([201, 503]).toContain(res.status);
      if (res.status === 503) {
        expect(res.headers['retry-after']).toBe(res.body.error.message === STORAGE_503 ? '5' : '1');
        expect(res.body.error.code).toBe('UNAVAILABLE');
      }
    }
    const refused = answers.filter((a) => a.status === 503 && a.body.error.message === STORAGE_503);
    expect(refused.length).toBeGreaterThan(0);
    expect(JSON.stringify(refused[0].body)).not.toMatch(/sqlite|ENOSPC|SQLITE_FULL|disk/i);

    // With WORKERS, the worker a probe reaches may be another than the one whose write failed: it hears of it within moments.
    let ready: Response | undefined;
    await eventually(async () => (ready = await t.http.get('/health/ready')).status === 503, 2000);
    expect(ready!.body.problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^writes to the (event|read|key) store are failing for want of disk space/)]),
    );

    rmSync(filler);
    // By itself: the next writes succeed, the read models catch up, readiness comes back.
    let email = '';
    await eventually(async () => (await create((email = uniqueEmail()))).status === 201);
    acknowledged.push(email);
    // Each store's next write clears it, on every worker: with WORKERS, the keys a worker failed to
    // make ahead are tried again by themselves within seconds, whichever worker takes the creates.
    await eventually(async () => (await t.http.get('/health/ready')).status === 200, 15_000);
    // Every create answered 201, before the disk filled up or after, is there to read.
    for (const address of acknowledged) {
      const list = await t.http.get(withToken(withQuery('customers', { email: address }))).expect(200);
      expect(list.body.data).toHaveLength(1);
    }
  }, 120_000);

  it('answers ready again once space returns, with no write to clear it', async () => {
    // Keys are made ahead from the first create on, so later creates reach the event store on a full
    // disk; an erasure empties the write-ahead log, so they find no room left in it to reuse.
    const id = (await create(uniqueEmail()).expect(201)).body.data.Customer.id as string;
    await t.http.post(withToken(`customers/${id}/erase`)).expect(200);
    fillTheDisk();
    // Creates until one fails at the event store's append (one may fail at its key first, or fit in the write-ahead log).
    const eventStoreFull = /^writes to the event store are failing for want of disk space/;
    let ready: Response | undefined;
    for (let i = 0; i < 200; i++) {
      await create(uniqueEmail());
      ready = await t.http.get('/health/ready');
      if (ready.body.problems.some((p: string) => eventStoreFull.test(p))) break;
    }
    expect(ready!.status).toBe(503);
    expect(ready!.body.problems).toEqual(expect.arrayContaining([expect.stringMatching(eventStoreFull)]));
    const { head } = ready!.body;

    rmSync(filler);
    // Only readiness is asked from here on, as an orchestrator that routes by it would: it probes the
    // disk and finds room, well before it would forget the failure (30 s after it).
    let after: Response | undefined;
    await eventually(async () => (after = await t.http.get('/health/ready')).status === 200, 15_000);
    expect(after!.body.problems).toEqual([]);
    expect(after!.body.head).toBe(head); // nothing was appended meanwhile
  }, 60_000);
});

describeUnlessWorkers('an erasure while the read model cannot be written', 'it makes the read store of the app in this process fail', () => {
  let t: TestApp;
  let readStore: ReadStore;
  let restore: () => void;

  beforeAll(async () => {
    t = await startTestApp({ env: { READ_YOUR_WRITES_TIMEOUT_MS: '500' } });
    readStore = t.app.get<ReadStore>(READ_STORE);
  });
  afterAll(() => t.close());

  /**
   * The read store's writes fail as on a full disk (its reads go on), as the adapter says it:
   * StoreFullError. In the adapter, under the app's own wrapper, which is what watches writes. The
   * probe readiness writes to the disk fails alike.
   */
  function readStoreDiskFull(): void {
    const adapter = (readStore as InstrumentedReadStore)['store'];
    const probe = t.app.get(WriteFailures)['disk']!;
    const { commit, erase } = adapter;
    const { write } = probe;
    const full = () => Promise.reject(new StoreFullError('SQLite', 'SQLITE_FULL'));
    Object.assign(adapter, { commit: full, erase: full });
    probe.write = () => Promise.reject(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }));
    restore = () => (Object.assign(adapter, { commit, erase }), (probe.write = write));
  }

  it('is gone from reads and lists once its key is destroyed, though its document still holds the values', async () => {
    const email = uniqueEmail();
    const created = await t.http.post(withToken('customers')).send({ email, name: 'Ada Erased', company: 'Forgotten Ltd' }).expect(201);
    const id = created.body.data.Customer.id as string;
    const kept = await t.http.post(withToken('customers')).send({ email: uniqueEmail(), company: 'Forgotten Ltd' }).expect(201);
    readStoreDiskFull();
    try {
      // The key is destroyed and the erasure appended; the read models cannot show it, nor be scrubbed.
      const erased = await t.http.post(withToken(`customers/${id}/erase`));
      expect({ status: erased.status, code: erased.body.error?.code, retryAfter: erased.headers['retry-after'] }).toEqual({
        status: 503,
        code: 'UNAVAILABLE',
        retryAfter: '1',
      });
      expect((await readStore.get('customers', ACCOUNT_IDS.a, id))?.fields.name).toBe('Ada Erased');

      await t.http.get(withToken(`customers/${id}`)).expect(404);
      expect((await t.http.get(withToken(withQuery('customers', { email }))).expect(200)).body.data).toEqual([]);
      const listed = await t.http.get(withToken(withQuery('customers', { company: 'forgotten', limit: 100 }))).expect(200);
      expect(listed.body.data.map((w: { Customer: { id: string } }) => w.Customer.id)).toEqual([kept.body.data.Customer.id]);
      expect(JSON.stringify(listed.body)).not.toContain('Ada Erased');

      const ready = await t.http.get('/health/ready').expect(503);
      expect(ready.body.problems).toEqual(expect.arrayContaining(['writes to the read store are failing for want of disk space (the last 0 s ago)']));
      // A retry answers 503 too, never 500: the erasure is saved, the service finishes it.
      expect((await t.http.post(withToken(`customers/${id}/erase`))).status).toBe(503);
    } finally {
      restore();
    }
    // Space is back: the background finishes the erasure, the retry answers 200, readiness returns.
    await eventually(async () => (await t.http.post(withToken(`customers/${id}/erase`))).status === 200);
    await eventually(async () => (await t.http.get('/health/ready')).status === 200);
    await t.http.get(withToken(`customers/${id}`)).expect(404);
  }, 60_000);
});
