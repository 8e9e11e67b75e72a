import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { ChildService, startChildService } from '../support/child-service';
import { runCli, spawnCli } from '../support/cli';
import { uid, uniqueEmail } from '../support/http-assertions';
import { describeOnSqlite } from '../support/stores';
import { makeDataDir, withQuery, withToken } from '../support/test-app';

interface Manifest {
  version: string;
  eventStorePosition: string;
  files: { name: string; copiedAt: string; bytes: number; sha256: string }[];
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const manifestOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;

/**
 * `backup <dir>` and `restore <dir>` as processes, beside the built service on the embedded store:
 * a backup taken under writes restores whole, and an erasure made after it stays erased.
 */
describeOnSqlite('backup and restore', () => {
  const root = makeDataDir();
  const dataDir = join(root, 'data');
  // Outside every data directory, as operators.md asks: a restore does not replace it.
  const env = { ERASURE_LOG: join(root, 'erasures.ndjson') };
  const backup = join(root, 'backup');
  let service: ChildService;
  let http: TestAgent;
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const stop = async (s: ChildService) => {
    s.process.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  };
  const start = async (dir: string) => {
    const started = await startChildService(dir, env);
    return { started, http: request(started.url) };
  };
  const create = async (body: object, key?: string) => {
    const post = http.post(withToken('customers'));
    if (key) void post.set('Idempotency-Key', key);
    return (await post.send(body).expect(201)).body.data.Customer as { id: string; email: string; created: number };
  };

  /** The erased person: created, changed, and created under an Idempotency-Key, before the backup. */
  const erased = { name: uid('Erased'), email: uniqueEmail(), company: uid('Co') };
  const erasedKey = uid('key');
  let erasedId: string;
  let createdAt: number;
  const kept = { name: uid('Kept'), email: uniqueEmail() };
  let keptId: string;
  /** Acknowledged before the backup began, and during it. */
  const before: string[] = [];
  const during: string[] = [];

  it('copies the store while writes go on, with a manifest of checksums, position and version', async () => {
    mkdirSync(dataDir);
    ({ started: service, http } = await start(dataDir));
    const person = await create({ name: erased.name, email: erased.email }, erasedKey);
    erasedId = person.id;
    createdAt = person.created;
    await http
      .put(withToken(`customers/${erasedId}`))
      .send({ company: erased.company })
      .expect(200);
    keptId = (await create(kept)).id;
    for (let i = 0; i < 20; i++) before.push((await create({ email: uniqueEmail() })).id);

    // Writers that run from before the backup starts until after it ends.
    const run = spawnCli(['backup', backup], dataDir, env);
    let backingUp = true;
    const exited = run.exited.finally(() => (backingUp = false));
    const writer = async () => {
      while (backingUp) during.push((await create({ email: uniqueEmail() })).id);
    };
    await Promise.all([writer(), writer()]);
    expect(await exited).toBe(0);
    expect(during.length).toBeGreaterThan(0);
    expect(run.stdout()).toMatch(/^Backed up to .*backup: service\.sqlite \(events and read models, [\d,]+ bytes\), keys\.sqlite \(data keys, [\d,]+ bytes\)/);

    const manifest = manifestOf(backup);
    expect(manifest.version).toBe(JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')).version);
    expect(Number(manifest.eventStorePosition)).toBeGreaterThan(before.length);
    expect(manifest.files.map((f) => f.name)).toEqual(['service.sqlite', 'keys.sqlite']);
    for (const file of manifest.files) {
      expect(sha256(join(backup, file.name))).toBe(file.sha256);
      expect(statSync(join(backup, file.name)).mode & 0o777).toBe(0o600);
    }
    const [events, keys] = manifest.files;
    expect(keys.copiedAt >= events.copiedAt).toBe(true);
  });

  it('refuses a target that is not empty, and leaves it as it was', async () => {
    const { code, stdout, stderr } = await runCli(['backup', backup], dataDir, env);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toContain(`Backup refused: The target ${backup} is not empty: back up into an empty or new directory.`);
    expect(manifestOf(backup).files).toHaveLength(2);
  });

  it('restores into an empty data directory only: every acknowledged write up to the copy, and the erasure made after it', async () => {
    // Erased after the backup was taken: the backup still holds the values.
    await http.post(withToken(`customers/${erasedId}/erase`)).expect(200);
    await stop(service);

    const refused = await runCli(['restore', backup], dataDir, env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Restore refused: DATA_DIR .* is not empty \(.*\): restore only into an empty data directory\./m);

    const restored = join(root, 'restored');
    const run = await runCli(['restore', backup], restored, env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Erased again 1 records of the erasure log ${env.ERASURE_LOG} that the backup still held`);
    // Nothing of the erased person left in plain in the restored files, before any service starts.
    for (const file of ['service.sqlite', 'keys.sqlite']) {
      const bytes = readFileSync(join(restored, file));
      for (const value of Object.values(erased)) expect(`${file}: ${bytes.includes(Buffer.from(value))}`).toBe(`${file}: false`);
    }

    ({ started: service, http } = await start(restored));
    try {
      // The erased person: in no read, list, history value, as-of read, feed entry or replay.
      await http.get(withToken(`customers/${erasedId}`)).expect(404);
      await http.get(withToken(withQuery(`customers/${erasedId}`, { as_of: createdAt + 1 }))).expect(404);
      const list = await http.get(withToken(withQuery('customers', { email: erased.email }))).expect(200);
      expect(list.body.data).toEqual([]);
      const history = (await http.get(withToken(`customers/${erasedId}/history`)).expect(200)).body.data as { event: string; changes: object }[];
      expect(history.map((h) => h.event)).toEqual(['CustomerCreated', 'CustomerUpdated', 'CustomerErased']);
      expect(history.map((h) => h.changes)).toEqual([{ name: null, email: null }, { company: null }, {}]);
      const feed = JSON.stringify((await http.get(withToken('events?limit=1000')).expect(200)).body.data);
      expect(feed).toContain(erasedId);
      for (const value of Object.values(erased)) expect(feed).not.toContain(value);
      const replay = await http.post(withToken('customers')).set('Idempotency-Key', erasedKey).send({ name: erased.name, email: erased.email }).expect(409);
      expect(replay.body.error.details).toEqual([{ field: 'Idempotency-Key', message: 'Idempotency-Key belongs to an erased record' }]);

      // Everyone else as the backup had them: every write acknowledged before it, some made during
      // it, and each readable, its history's values opened with a key the copy of the keys holds.
      expect((await http.get(withToken(`customers/${keptId}`)).expect(200)).body.data[0].Customer).toMatchObject(kept);
      const ids = new Set<string>();
      for (let page = 1; ; page++) {
        const res = await http.get(withToken(`customers?limit=100&page=${page}`)).expect(200);
        for (const c of res.body.data as { Customer: { id: string } }[]) ids.add(c.Customer.id);
        if (res.body.data.length < 100) break;
      }
      for (const id of before) expect(ids.has(id)).toBe(true);
      const copied = during.filter((id) => ids.has(id));
      expect(ids.size).toBe(1 + before.length + copied.length);
      for (const id of [...before.slice(-3), ...copied.slice(-3)]) {
        const [created] = (await http.get(withToken(`customers/${id}/history`)).expect(200)).body.data;
        expect(created.changes.email).toEqual({ from: '', to: expect.stringContaining('@') });
      }
    } finally {
      await stop(service);
    }
  });

  it('erases again at the start of a service on files copied back by hand', async () => {
    const byHand = join(root, 'by-hand');
    mkdirSync(byHand);
    for (const file of ['service.sqlite', 'keys.sqlite']) cpSync(join(backup, file), join(byHand, file));
    ({ started: service, http } = await start(byHand));
    try {
      expect(service.output()).toContain('Erased again 1 records of the erasure log');
      await http.get(withToken(`customers/${erasedId}`)).expect(404);
      const history = (await http.get(withToken(`customers/${erasedId}/history`)).expect(200)).body.data as { event: string; changes: object }[];
      expect(history.map((h) => h.changes)).toEqual([{ name: null, email: null }, { company: null }, {}]);
      expect(history.at(-1)!.event).toBe('CustomerErased');
    } finally {
      await stop(service);
    }
  });

  /** A copy of the backup in `name`, with `change` made to it and the manifest's checksums made to fit (`fit`). */
  const altered = (name: string, change: (dir: string) => void, fit = true) => {
    const dir = join(root, name);
    cpSync(backup, dir, { recursive: true });
    change(dir);
    if (fit) {
      const manifest = manifestOf(dir);
      for (const file of manifest.files) Object.assign(file, { bytes: statSync(join(dir, file.name)).size, sha256: sha256(join(dir, file.name)) });
      writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    }
    return dir;
  };
  const refusal = async (dir: string) => {
    const target = join(root, `target-${uid()}`);
    const { code, stderr } = await runCli(['restore', dir], target, env);
    expect(code).toBe(1);
    expect(existsSync(target)).toBe(false);
    return stderr;
  };

  it('refuses a damaged backup, one without its manifest, and one whose key store is older than its events', async () => {
    const damaged = altered(
      'damaged',
      (dir) => {
        const bytes = readFileSync(join(dir, 'keys.sqlite'));
        bytes[bytes.length - 1] ^= 1;
        writeFileSync(join(dir, 'keys.sqlite'), bytes);
      },
      false,
    );
    expect(await refusal(damaged)).toContain('keys.sqlite does not match its checksum in the manifest: the backup is damaged or was altered.');

    const unfinished = altered('unfinished', (dir) => rmSync(join(dir, 'manifest.json')), false);
    expect(await refusal(unfinished)).toContain('No manifest.json in');

    // The key store of a backup taken before the last writes, beside the events of a later one.
    const early = join(root, 'early');
    const source = join(root, 'restored');
    const later = join(root, 'later');
    ({ started: service, http } = await start(source));
    try {
      expect((await runCli(['backup', early], source, env)).code).toBe(0);
      // Erased after the early copy and before the later one.
      await http.post(withToken(`customers/${before[0]}/erase`)).expect(200);
      const late = await create({ email: uniqueEmail() });
      expect((await runCli(['backup', later], source, env)).code).toBe(0);
      const mixed = altered('mixed', (dir) => {
        rmSync(dir, { recursive: true });
        cpSync(later, dir, { recursive: true });
        cpSync(join(early, 'keys.sqlite'), join(dir, 'keys.sqlite'));
      });
      const stderr = await refusal(mixed);
      expect(stderr).toContain(`older than its events (1 records have events but no key: customer-${late.id})`);
      expect(stderr).toContain('Take a new backup with the backup command (it copies the key store after the events)');
    } finally {
      await stop(service);
    }

    // The other way round, as when records are erased between the copy of the events and that of
    // the keys: the first backup's events, the later keys, where both erasures have destroyed their
    // keys. Their erasure events are not in the events: the start appends them.
    const erasedBetween = altered('between', (dir) => cpSync(join(later, 'keys.sqlite'), join(dir, 'keys.sqlite')));
    const target = join(root, 'between-restored');
    const run = await runCli(['restore', erasedBetween], target, env);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Erased again 2 records');
    ({ started: service, http } = await start(target));
    try {
      await http.get(withToken(`customers/${before[0]}`)).expect(404);
      const first = (await http.get(withToken(`customers/${erasedId}/history`)).expect(200)).body.data as { event: string }[];
      expect(first.map((h) => h.event)).toEqual(['CustomerCreated', 'CustomerUpdated', 'CustomerErased']);
      const history = (await http.get(withToken(`customers/${before[0]}/history`)).expect(200)).body.data as { event: string; changes: object }[];
      expect(history.map((h) => [h.event, h.changes])).toEqual([
        ['CustomerCreated', { email: null }],
        ['CustomerErased', {}],
      ]);
    } finally {
      await stop(service);
    }
  });

  it('explains both commands with --help', async () => {
    for (const command of ['backup', 'restore']) {
      const { code, stdout } = await runCli([command, '--help'], dataDir, env);
      expect(code).toBe(0);
      expect(stdout).toMatch(new RegExp(`^Usage: npm run cli -- ${command} <dir>`));
    }
    const usage = await runCli(['backup'], dataDir, env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^backup needs one directory\./);
  });
});
