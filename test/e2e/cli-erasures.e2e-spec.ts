import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { ChildService, startChildService } from '../support/child-service';
import { runCli } from '../support/cli';
import { uid, uniqueEmail } from '../support/http-assertions';
import { describeOnSqlite } from '../support/stores';
import { makeDataDir, withQuery, withToken } from '../support/test-app';

/** The erased person's values found in the files of a directory, read as bytes: none, once erased. */
const valuesIn = (dir: string, values: string[]) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .flatMap((entry) => {
      const bytes = readFileSync(join(entry.parentPath, entry.name));
      return values.filter((value) => bytes.includes(Buffer.from(value))).map((value) => `${entry.name}: ${value}`);
    });

/**
 * `erasures apply` as a process, on a restore made by hand as operators.md's runbook makes one:
 * the events from a backup taken before an erasure, the keys from one taken after it. The key is
 * destroyed in the restored key store, so the start alone does not see the erasure; the command does.
 */
describeOnSqlite('erasures apply', () => {
  const root = makeDataDir();
  // Outside every data directory, as operators.md asks: it outlives them.
  const env = { ERASURE_LOG: join(root, 'erasures.ndjson') };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const person = { name: uid('Erased'), email: uniqueEmail(), company: uid('Co') };
  let id: string;
  let createdAt: number;

  const start = async (dir: string) => {
    const service = await startChildService(dir, env);
    return { service, http: request(service.url) };
  };
  const stop = async (service: ChildService) => {
    service.process.kill('SIGTERM');
    expect(await service.exited).toBe(0);
  };
  /** A data directory as restored by hand: service.sqlite from before the erasure, keys.sqlite from after it. */
  const restoredByHand = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir);
    cpSync(join(root, 'before', 'service.sqlite'), join(dir, 'service.sqlite'));
    cpSync(join(root, 'after', 'keys.sqlite'), join(dir, 'keys.sqlite'));
    return dir;
  };
  const historyOf = async (http: TestAgent) => (await http.get(withToken(`customers/${id}/history`)).expect(200)).body.data as { event: string }[];

  beforeAll(async () => {
    const dataDir = join(root, 'data');
    mkdirSync(dataDir);
    const { service, http } = await start(dataDir);
    try {
      const created = (await http.post(withToken('customers')).send({ name: person.name, email: person.email }).expect(201)).body.data.Customer;
      ({ id, created: createdAt } = created as { id: string; created: number });
      await http
        .put(withToken(`customers/${id}`))
        .send({ company: person.company })
        .expect(200);
      expect((await runCli(['backup', join(root, 'before')], dataDir, env)).code).toBe(0);
      await http.post(withToken(`customers/${id}/erase`)).expect(200);
      expect((await runCli(['backup', join(root, 'after')], dataDir, env)).code).toBe(0);
    } finally {
      await stop(service);
    }
    // The backups' files, as a restore by hand copies them: no write-ahead log beside them.
    for (const backup of ['before', 'after']) expect(readdirSync(join(root, backup)).sort()).toEqual(['keys.sqlite', 'manifest.json', 'service.sqlite']);
  });

  it('without it, the start leaves the erasure unfinished: the restored events lack it', async () => {
    const dir = restoredByHand('started-directly');
    const { service, http } = await start(dir);
    try {
      expect((await historyOf(http)).map((h) => h.event)).toEqual(['CustomerCreated', 'CustomerUpdated']);
    } finally {
      await stop(service);
    }
    // The read model the backup held is not scrubbed either.
    expect(valuesIn(dir, [person.email])).toEqual([`service.sqlite: ${person.email}`]);
  });

  it('applies the erasure again, and the start finishes it: no read, history, feed entry or file shows the person', async () => {
    const dir = restoredByHand('applied');
    const run = await runCli(['erasures', 'apply'], dir, env);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `Applied again 1 erasure of the erasure log ${env.ERASURE_LOG}: their keys are destroyed and their read models scrubbed; the service appends their erasure events as it starts, before it answers.\n`,
    );
    expect(run.stderr).toContain(`Store: the SQLite file ${join(dir, 'service.sqlite')}`);
    expect(valuesIn(dir, Object.values(person))).toEqual([]);

    const { service, http } = await start(dir);
    try {
      await http.get(withToken(`customers/${id}`)).expect(404);
      await http.get(withToken(withQuery(`customers/${id}`, { as_of: createdAt + 1 }))).expect(404);
      expect((await historyOf(http)).map((h) => h.event)).toEqual(['CustomerCreated', 'CustomerUpdated', 'CustomerErased']);
      const feed = (await http.get(withToken('events?limit=1000')).expect(200)).body.data as { type: string; subject: string }[];
      expect(feed.filter((e) => e.subject === id).map((e) => e.type)).toEqual(['customer.created', 'customer.updated', 'customer.erased']);
      for (const value of Object.values(person)) expect(JSON.stringify(feed)).not.toContain(value);
    } finally {
      await stop(service);
    }
    expect(valuesIn(dir, Object.values(person))).toEqual([]);

    // The stores now show the erasure whole: nothing to apply again.
    const again = await runCli(['erasures', 'apply'], dir, env);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(`Applied again 0 erasures of the erasure log ${env.ERASURE_LOG}: the stores show each of its erasures whole.\n`);
  });

  it('refuses a data directory with no store, and explains itself with --help', async () => {
    const empty = join(root, 'empty');
    const missing = await runCli(['erasures', 'apply'], empty, env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`No store at ${join(empty, 'service.sqlite')}: set DATA_DIR to the data directory the stores were restored into.`);
    expect(readdirSync(root)).not.toContain('empty');

    const help = await runCli(['erasures', 'apply', '--help'], empty, env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run cli -- erasures apply\n/);
    expect((await runCli(['--help'], empty, env)).stdout).toMatch(/\n {2}erasures apply +Apply the erasure log again to stores restored by hand/);
    const usage = await runCli(['erasures', 'apply', 'now'], empty, env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^erasures apply takes no arguments\./);
  });
});
