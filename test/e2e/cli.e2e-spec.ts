import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { chmodSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seedEvents, SeededRecords } from '../../bench/seed-events';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { READ_MODELS, RECORD_KINDS } from '../../src/read-models';
import type { ReadStore } from '../../src/read-store/read-store.port';
import { Database } from '../../src/storage/sqlite-database';
import { openEventStore, openReadStore } from '../../src/stores/stores.module';
import { runCli, spawnCli } from '../support/cli';
import { describeOnSqlite } from '../support/stores';
import { makeDataDir, startTestApp } from '../support/test-app';

const sqliteFile = (dataDir: string) => join(dataDir, 'service.sqlite');
const event = (type: string, data: Record<string, unknown> = {}): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { accountId: 'account-a', correlationId: 'c', causationId: 'c', schemaVersion: 1 },
});

async function statusJson(dataDir: string) {
  const { code, stdout } = await runCli(['projections', 'status', '--json'], dataDir);
  expect(code).toBe(0);
  return JSON.parse(stdout);
}

/** The read store on the data directory, as the CLI and the service open it. */
async function openReads(dataDir: string): Promise<ReadStore> {
  const reads = await openReadStore({ sqliteFile: sqliteFile(dataDir) });
  for (const p of READ_MODELS) await reads.ensureCollection(p.schema);
  return reads;
}

const dirs: string[] = [];
const dataDir = () => {
  const dir = makeDataDir();
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('CLI usage', () => {
  const dir = dataDir();

  it.each([
    [[]],
    [['projections', 'status']],
    [['projections', 'rebuild']],
    [['projections', 'parked']],
    [['projections', 'retry']],
    [['projections', 'skip']],
    [['events', 'tail']],
  ])('%j --help explains itself and exits 0', async (args) => {
    const { code, stdout } = await runCli([...args, '--help'], dir);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: npm run cli -- /);
    expect(stdout).toContain('--help');
  });

  it.each([
    [[], /^No command given\./, '<command>'],
    [['projections', 'drop'], /^Unknown command "projections drop"\./, '<command>'],
    [
      ['projections', '--help'],
      /^"projections" needs an action: projections status or projections parked or projections retry or projections skip or projections rebuild\./,
      '<command>',
    ],
    [['projections', 'rebuild'], /^projections rebuild needs one read model name \(profiles, customers, feed\) or all\./, 'projections rebuild'],
    [['projections', 'rebuild', 'invoices'], /^No read model named "invoices": use profiles, customers, feed or all\./, 'projections rebuild'],
    [['projections', 'rebuild', 'all', '--grace-seconds', 'soon'], /--grace-seconds must be a whole number/, 'projections rebuild'],
    // Past Node's timer range the grace period was skipped, and the drop reported all the same.
    [
      ['projections', 'rebuild', 'all', '--grace-seconds', '2200000'],
      /^--grace-seconds must be a whole number of seconds from 0 to 86400; got "2200000"\./,
      'projections rebuild',
    ],
    [['projections', 'status', '--stream', 'x'], /^projections status has no option --stream\./, 'projections status'],
    [['projections', 'status', '--verbose'], /^projections status has no option --verbose\./, 'projections status'],
    // parseArgs's own messages suggest a `--`, which npm run swallows: the command's usage instead.
    [['projections', 'rebuild', 'all', '--grace-second', '0'], /^projections rebuild has no option --grace-second\./, 'projections rebuild'],
    [['projections', 'rebuild', 'all', '--grace-seconds'], /^--grace-seconds needs a value\./, 'projections rebuild'],
    [['--verbose'], /^The CLI has no option --verbose\./, '<command>'],
    [['projections', 'skip', 'customer-x'], /^projections skip needs --reason <text>: it is recorded\./, 'projections skip'],
    [['projections', 'skip', 'all', '--reason', 'x'], /^projections skip takes one stream id at a time, not all\./, 'projections skip'],
    [['projections', 'retry'], /^projections retry needs one stream id or all\./, 'projections retry'],
  ])('%j is a usage error: exit 2, what was wrong and the usage on stderr', async (args, message, usage) => {
    const { code, stdout, stderr } = await runCli(args, dir);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr).not.toContain("after '--'");
    // The command's own usage where one is named, else the top-level one.
    expect(stderr).toContain(`Usage: npm run cli -- ${usage} `);
  });
});

describeOnSqlite('a data directory without a store', () => {
  it.each([[['projections', 'status']], [['projections', 'rebuild', 'all']], [['events', 'tail']]])(
    '%j says which store it looked for, exit 1, and makes nothing',
    async (args) => {
      const dir = dataDir();
      const { code, stdout, stderr } = await runCli(args, dir);
      expect({ code, stdout, stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr:
          `Store: the SQLite file ${sqliteFile(dir)}\n` +
          `No store at ${sqliteFile(dir)}. Run the command in the service's directory, or set DATA_DIR to its data directory (the service makes the store on its first start).\n`,
      });
      expect(readdirSync(dir)).toEqual([]);
    },
  );
});

/** Root opens any file: only another user meets a store it may not open. */
const asRoot = process.getuid?.() === 0;

describeOnSqlite('a store the command cannot open', () => {
  (asRoot ? it.skip : it)('says so in one line, exit 1 (needs a user other than root: root opens any file)', async () => {
    const dir = dataDir();
    writeFileSync(sqliteFile(dir), '');
    chmodSync(sqliteFile(dir), 0o000);
    const { code, stdout, stderr } = await runCli(['projections', 'status'], dir);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toBe(
      `Store: the SQLite file ${sqliteFile(dir)}\n` +
        `Cannot open the store (EACCES: permission denied, open '${sqliteFile(dir)}'): run the command as the service's user, on its data directory.\n`,
    );
  });
});

describeOnSqlite('projections status and rebuild', () => {
  const dir = dataDir();
  let seeded: SeededRecords;
  beforeAll(async () => {
    seeded = await seedEvents(sqliteFile(dir), 2000);
  });

  it('shows each read model behind the head before any projector ran', async () => {
    const { code, stdout, stderr } = await runCli(['projections', 'status'], dir);
    expect(code).toBe(0);
    // The seeds are written as a version before encryption wrote them: the first open seals them.
    expect(stderr).toBe(
      `Store: the SQLite file ${sqliteFile(dir)}\n` +
        `Sealing the events written before encryption with their records' keys, once (10,000-30,000 events/s; if stopped, the next start or command finishes it)\n` +
        `Sealed ${seeded.events} events written before encryption with their records' keys\n`,
    );
    const head = String(seeded.events);
    const lag = seeded.events.toLocaleString('en-US');
    expect(stdout).toBe(
      `Event store head: ${head}\n\n` +
        'PROJECTION  GENERATION  CHECKPOINT  LAG    REBUILD  PARKED  FAILED ON\n' +
        `profiles    1           0           ${lag}  -        -       -\n` +
        `customers   1           0           ${lag}  -        -       -\n` +
        `feed        1           0           ${lag}  -        -       -\n`,
    );
    expect(await statusJson(dir)).toEqual({
      head,
      projections: READ_MODELS.map((p) => ({
        name: p.name,
        generation: 1,
        checkpoint: '0',
        lag: seeded.events,
        rebuild: null,
        failure: null,
        parked: { streams: 0, events: 0 },
      })),
    });
  });

  it('rebuilds all read models into new storage, with progress on stderr, and swaps it in', async () => {
    const { code, stdout, stderr } = await runCli(['projections', 'rebuild', 'all', '--json', '--grace-seconds', '0'], dir);
    expect(code).toBe(0);
    const events = seeded.events.toLocaleString('en-US');
    const lines = stderr.split('\n');
    expect(lines[0]).toBe(`Store: the SQLite file ${sqliteFile(dir)}`);
    // Sized as the service is (memory-sizing.ts), with the limit this machine gives, if any.
    expect(lines[1]).toMatch(/^Memory: (limit|no limit).*; heap limit \d+ MiB \(.*--max-semi-space-size=\d+ sized\); .*REBUILD_ROWIDS=\d+$/);
    expect(lines[2]).toBe(`profiles, customers, feed: 0%  0/${events} events  0 events/s  ? left`);
    expect(lines.slice(-5)).toEqual([
      `profiles, customers, feed: 100%  ${events}/${events} events  building the indexes and swapping in`,
      expect.stringMatching(new RegExp(`^profiles, customers, feed: done  ${events} events in [\\d.]+s, [\\d,]+ events/s$`)),
      "The rebuilt read models are live (generation profiles 2, customers 2, feed 2). The old storage is dropped in 0s, once reads that started on it are done; Ctrl-C leaves it for the next rebuild or the service's next start to drop.",
      'Dropped the old storage of profiles, customers, feed.',
      '',
    ]);
    const { rebuilt } = JSON.parse(stdout);
    expect(rebuilt).toEqual(
      READ_MODELS.map((p) => ({ projection: p.name, generation: 2, events: seeded.events, ms: expect.any(Number), eventsPerSecond: expect.any(Number) })),
    );
    const status = await statusJson(dir);
    expect(status.projections.map((p: { generation: number; lag: number }) => [p.generation, p.lag])).toEqual([
      [2, 0],
      [2, 0],
      [2, 0],
    ]);

    const reads = await openReads(dir);
    try {
      const customers = await reads.getMany('customers', seeded.customerIds);
      expect(customers.size).toBe(seeded.customerIds.length);
      // Each record: created, three updates, and every fifth deleted.
      const deleted = [...customers.values()].filter((d) => d.deleted);
      const seededDeleted = seeded.customerIds.filter((_, i) => (2 * i + 1) % 5 === 4); // customers are the odd records
      expect(deleted.map((d) => d.id).sort()).toEqual(seededDeleted.sort());
      for (const d of customers.values()) expect(d.revision).toBe(d.deleted ? 4 : 3);
      expect((await reads.getMany('profiles', seeded.profileIds)).size).toBe(seeded.profileIds.length);
    } finally {
      await reads.close();
    }
  });

  it('prints a table by default', async () => {
    const { code, stdout } = await runCli(['projections', 'rebuild', 'customers', '--grace-seconds', '0'], dir);
    expect(code).toBe(0);
    const events = seeded.events.toLocaleString('en-US');
    expect(stdout).toMatch(new RegExp(`^PROJECTION  GENERATION  EVENTS  SECONDS  EVENTS/S\ncustomers   3           ${events}   \\d+\\.\\d +[\\d,]+\n$`));
  });
});

/** The tables of the customers read model's generations in the SQLite file of `dir`. */
function customerTables(dir: string): string[] {
  const db = new Database(sqliteFile(dir), { readonly: true });
  try {
    return db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'customers__g%' ORDER BY name`).pluck().all() as string[];
  } finally {
    db.close();
  }
}

describeOnSqlite('an interrupted rebuild', () => {
  const dir = dataDir();
  beforeAll(() => seedEvents(sqliteFile(dir), 60_000));

  /** Starts a rebuild and resolves once it has committed a batch into a generation above `after`. */
  async function rebuildUnderWay(reads: ReadStore, after = 1) {
    const run = spawnCli(['projections', 'rebuild', 'all'], dir);
    for (;;) {
      const { building } = await reads.status('customers');
      if (building?.position && building.generation > after) return { run, generation: building.generation };
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('leaves the live read model untouched on Ctrl-C (dropping what it built) or kill -9, and can be run again', async () => {
    const reads = await openReads(dir);
    try {
      const interrupted = await rebuildUnderWay(reads);
      interrupted.run.process.kill('SIGINT');
      expect(await interrupted.run.exited).toBe(130);
      expect(interrupted.run.stderr()).toContain('Rebuild interrupted: the live read model of profiles, customers, feed is unchanged');
      let status = await statusJson(dir);
      expect(status.projections[1]).toMatchObject({ generation: 1, checkpoint: '0', rebuild: null });
      expect(customerTables(dir)).toEqual(['customers__g1']);

      // Killed, it can drop nothing: the next rebuild does.
      const killed = await rebuildUnderWay(reads, interrupted.generation);
      expect(killed.generation).toBeGreaterThan(interrupted.generation);
      killed.run.process.kill('SIGKILL');
      expect(await killed.run.exited).toBe('SIGKILL');
      expect(await reads.status('customers')).toMatchObject({ live: { generation: 1, position: null }, building: { generation: killed.generation } });

      const again = await runCli(['projections', 'rebuild', 'all', '--json', '--grace-seconds', '0'], dir);
      expect(again.code).toBe(0);
      const generation = JSON.parse(again.stdout).rebuilt[0].generation;
      expect(generation).toBeGreaterThan(killed.generation);
      status = await statusJson(dir);
      expect(status.projections[1]).toMatchObject({ generation, lag: 0, rebuild: null });
      expect(customerTables(dir)).toEqual([`customers__g${generation}`]); // the killed one's and the replaced one's dropped
    } finally {
      await reads.close();
    }
  });
});

describeOnSqlite('Ctrl-C in the grace period after the swap', () => {
  const dir = dataDir();
  beforeAll(() => seedEvents(sqliteFile(dir), 2000));

  const tables = () => customerTables(dir);

  it('keeps the rebuilt model live, says the old storage is left, and the next start of the service drops it', async () => {
    const run = spawnCli(['projections', 'rebuild', 'customers', '--grace-seconds', '60'], dir);
    await run.waitForStderr(/The rebuilt read models are live \(generation customers 2\)\. The old storage is dropped in 60s/);
    expect(tables()).toEqual(['customers__g1', 'customers__g2']);
    run.process.kill('SIGINT');
    expect(await run.exited).toBe(130);
    expect(run.stderr()).toMatch(
      /Interrupted in the grace period: the rebuilt read models stay live; the old storage is dropped by the next rebuild or the service's next start\.\n$/,
    );
    expect(run.stdout()).toMatch(/^PROJECTION {2}GENERATION {2}EVENTS {2}SECONDS {2}EVENTS\/S\ncustomers {3}2 /);
    expect((await statusJson(dir)).projections[1]).toMatchObject({ generation: 2, lag: 0, rebuild: null });
    expect(tables()).toEqual(['customers__g1', 'customers__g2']);

    // The service drops storage retired longer ago than the default grace period (10 s) when it
    // starts: the retirement made 11 s older in the file, rather than waited out.
    const db = new Database(sqliteFile(dir));
    try {
      db.prepare("UPDATE read_model_generations SET updated_at = updated_at - 11000 WHERE state = 'retired'").run();
    } finally {
      db.close();
    }
    const service = await startTestApp({ dataDir: dir });
    await service.close({ keepData: true });
    expect(tables()).toEqual(['customers__g2']);
  });
});

describeOnSqlite('a poison event', () => {
  const dir = dataDir();
  const streamId = `customer-${randomUUID()}`;
  const failure = { streamId, revision: 0, error: `CustomerUpdated before CustomerCreated in ${streamId}` };
  beforeAll(async () => {
    const events = await openEventStore({ sqliteFile: sqliteFile(dir) }, RECORD_KINDS);
    await events.appendToStream(streamId, [event('CustomerUpdated', { name: 'no creation first' })], 'no_stream');
    await events.close();
  });

  it('parks it in a rebuild run with --park, which goes on and swaps in the new generation', async () => {
    const parkDir = dataDir();
    const events = await openEventStore({ sqliteFile: sqliteFile(parkDir) }, RECORD_KINDS);
    await events.appendToStream(streamId, [event('CustomerUpdated', { name: 'no creation first' })], 'no_stream');
    await events.close();
    const { code, stderr } = await runCli(['projections', 'rebuild', 'customers', '--park', '--grace-seconds', '0'], parkDir);
    expect(code).toBe(0);
    expect(stderr).toContain(`customers: parked ${streamId} at revision 0 and the events after it: ${failure.error}`);
    expect((await statusJson(parkDir)).projections[1]).toMatchObject({ generation: 2, parked: { streams: 1, events: 1 } });
    const parked = JSON.parse((await runCli(['projections', 'parked', '--json'], parkDir)).stdout);
    expect(parked.readModels[1]).toMatchObject({ name: 'customers', generation: 2, parked: [{ streamId, first: { revision: 0, error: failure.error } }] });
    // No service runs: the CLI takes the read model's lease and carries the requests out itself.
    const retry = await runCli(['projections', 'retry', 'all'], parkDir);
    expect(retry).toMatchObject({ code: 1, stdout: `customers: ${streamId} is still parked, at revision 0: ${failure.error}\n` });
    expect(retry.stderr).toContain('customers: no instance of the service folds it: carrying out the retry here');
    const skip = await runCli(['projections', 'skip', streamId, '--reason', 'written by hand'], parkDir);
    expect(skip).toMatchObject({ code: 0, stdout: `customers: ${streamId} unparked: its parked events are folded\n` });
    const after = JSON.parse((await runCli(['projections', 'parked', '--json'], parkDir)).stdout);
    expect(after.readModels[1]).toMatchObject({ parked: [], skipped: [{ streamId, revision: 0, reason: 'written by hand' }] });
    await expect(runCli(['projections', 'retry', streamId], parkDir)).resolves.toMatchObject({
      code: 1,
      stdout: `${streamId} is not parked in any read model.\n`,
    });
  });

  it('stops a rebuild, exit 1, naming the event; the live model stays as it was', async () => {
    const { code, stderr } = await runCli(['projections', 'rebuild', 'customers'], dir);
    expect(code).toBe(1);
    expect(stderr).toContain(`Rebuild stopped, the live read model is unchanged: cannot apply ${streamId}@0: ${failure.error}`);
    expect((await statusJson(dir)).projections[1]).toMatchObject({ generation: 1, checkpoint: '0' });
  });

  it('shows in status once the service stopped on it (POISON_EVENTS=stop)', async () => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const service = await startTestApp({ dataDir: dir, env: { POISON_EVENTS: 'stop' } });
    try {
      const customersState = async () => (await service.http.get('/health/ready')).body.projections[1].state;
      while ((await customersState()) !== 'failed') await new Promise((r) => setTimeout(r, 20));
    } finally {
      await service.close({ keepData: true });
      jest.restoreAllMocks();
    }
    const { stdout } = await runCli(['projections', 'status'], dir);
    // The rebuild that stopped on it dropped what it had built: no rebuild is left under way.
    // The head holds the event and the note of the versions written before it (written-versions.ts).
    expect(stdout).toContain(`customers   1           0           2    -        -       ${streamId}@0: ${failure.error}`);
    expect((await statusJson(dir)).projections[1].failure).toEqual(failure);
  });
});

describeOnSqlite('events tail', () => {
  it('prints the events of the stream as they are appended, one JSON line each, until Ctrl-C', async () => {
    const dir = dataDir();
    const events = await openEventStore({ sqliteFile: sqliteFile(dir) }, RECORD_KINDS);
    try {
      // Each type's first append is preceded by a note of its version (written-versions.ts): positions 1, 2.
      await events.appendToStream('customer-before', [event('CustomerCreated', { name: 'Before' })], 'no_stream');
      const tail = spawnCli(['events', 'tail', '--stream', 'customer-followed'], dir);
      await tail.waitForStderr(/Waiting for events after position 2 \(Ctrl-C to stop\)\n/);
      await events.appendToStream('customer-followed', [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
      await events.appendToStream('customer-other', [event('CustomerCreated', { name: 'Other' })], 'no_stream');
      await events.appendToStream('customer-followed', [event('CustomerDeleted')], 0);
      while (tail.stdout().split('\n').length < 3) await new Promise((r) => setTimeout(r, 20));
      tail.process.kill('SIGINT');
      expect(await tail.exited).toBe(0);
      const lines = tail
        .stdout()
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toEqual([
        expect.objectContaining({ position: '3', streamId: 'customer-followed', revision: 0, type: 'CustomerCreated', data: { name: 'Ada' } }),
        expect.objectContaining({ position: '6', streamId: 'customer-followed', revision: 1, type: 'CustomerDeleted', data: {} }),
      ]);
      // Read as every path reads it: in its type's current shape (stored without a version, it is
      // version 1, whose time is the one the store recorded).
      expect(lines[0].metadata).toEqual({
        accountId: 'account-a',
        correlationId: 'c',
        causationId: 'c',
        schemaVersion: 2,
        eventVersion: 2,
        occurredAt: lines[0].recordedAt,
      });
    } finally {
      await events.close();
    }
  });
});
