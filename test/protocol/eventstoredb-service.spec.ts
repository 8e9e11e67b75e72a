import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { WRITTEN_VERSIONS_STREAM } from '../../src/event-store/written-versions';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { runCli } from '../support/cli';
import {
  answerReadBackwards,
  answerStreamRead,
  AppendAnswer,
  appendNotHandled,
  appendStreamDeleted,
  appendSuccess,
  caughtUpMessage,
  checkpointMessage,
  confirmationMessage,
  describeRead,
  eventMessage,
  failStreamDeleted,
  handWrittenMessage,
  passesFilter,
  ScriptedEvent,
  InMemoryEventStoreDb,
  ScriptedServer,
  startInMemoryEventStoreDb,
  startScriptedEventStoreDb,
  streamNotFoundMessage,
} from '../support/scripted-eventstoredb';
import { makeDataDir, startTestApp, TestApp, withToken } from '../support/test-app';
import { ChildService, startChildService } from '../support/child-service';
import request from 'supertest';

/**
 * The service and the CLI on EventStoreDB's client protocol, served by a scripted gRPC endpoint
 * (test/support/scripted-eventstoredb.ts) that answers as the KurrentDB source named in it does;
 * read models on SQLite. Not a test against EventStoreDB: see test/contract and test:integration.
 *
 * The log: a customer written at byte offset 5000 of the transaction log, after the server's own
 * events; positions are offsets, so a count of "events behind" taken from them would be thousands.
 */
const customerId = randomUUID();
const log: ScriptedEvent[] = [
  { streamId: `customer-${customerId}`, revision: 0, commit: 5000n, type: 'CustomerCreated', data: { name: 'Ada', email: 'ada@x.io' } },
  { streamId: '$settings', revision: 0, commit: 300n },
];

/**
 * Reads of $all backwards get the log; subscriptions get what their filter matches, the checkpoint
 * 24.10.14 sends on going live (that of the last event sent, none when none matched:
 * Enumerator.AllSubscriptionFiltered.cs v24.10.14 lines 146-147 and 366-370), then "caught up".
 * Reads of a stream find none; appends are answered "Server Is Not Ready" (Streams.Append.cs
 * v24.10.6 lines 110-113).
 */
function startServer(): Promise<ScriptedServer> {
  return startScriptedEventStoreDb({
    read: (call) => {
      const read = describeRead(call);
      if (read.stream !== undefined) {
        call.write(streamNotFoundMessage(read.stream));
        return call.end();
      }
      if (!read.subscription) return answerReadBackwards(call, log);
      const matches = (e: ScriptedEvent) => (read.prefixes.length > 0 ? read.prefixes.some((p) => e.streamId.startsWith(p)) : !e.streamId.startsWith('$'));
      const sent = [...log].reverse().filter(matches);
      call.write(confirmationMessage());
      for (const e of sent) call.write(eventMessage(e));
      if (sent.length > 0) call.write(checkpointMessage(sent[sent.length - 1].commit));
      call.write(caughtUpMessage());
    },
    append: (_request, answer) => answer(appendNotHandled('Server Is Not Ready')),
  });
}

describe('the service on the EventStoreDB protocol (scripted endpoint)', () => {
  let server: ScriptedServer;
  let t: TestApp;
  beforeAll(async () => {
    server = await startServer();
    t = await startTestApp({ env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    await t?.close();
    await server?.close();
  });

  it('is ready with lag unknown, not thousands of "events" behind, though profiles never saw a position', async () => {
    const ready = await t.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', head: '5000', problems: [] });
    expect(ready.body.projections.map((p: { name: string; lag: unknown }) => [p.name, p.lag])).toEqual([
      ['profiles', null],
      ['customers', null],
      ['feed', null],
    ]);
  });

  it('leaves projection_lag out of /metrics rather than report byte offsets as events', async () => {
    const metrics = await t.http.get('/metrics').expect(200);
    expect(metrics.text).toContain('# TYPE projection_lag gauge');
    expect(metrics.text).not.toMatch(/^projection_lag\{/m);
  });

  it('answers a write the server is not ready for with 503 and Retry-After, not 500', async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const res = await t.http.post(withToken('customers')).send({ email: 'later@x.io' });
    jest.restoreAllMocks();
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.body.error.code).toBe('UNAVAILABLE');
    expect(JSON.stringify(res.body)).not.toMatch(/Not Ready|gRPC|EventStoreDB/);
  });
});

describe('the service when EventStoreDB stops answering (scripted endpoint)', () => {
  let server: ScriptedServer;
  let t: TestApp;
  let silent = false;
  beforeAll(async () => {
    // Answers as startServer's endpoint does until `silent`, then accepts every call and never answers.
    // The record of event versions written (src/event-store/written-versions.ts) is answered
    // throughout, as if noted before the silence: the write under test is the record's own.
    server = await startScriptedEventStoreDb({
      read: (call) => {
        const read = describeRead(call);
        if (silent && read.stream !== WRITTEN_VERSIONS_STREAM) return;
        if (read.stream !== undefined) {
          call.write(streamNotFoundMessage(read.stream));
          return call.end();
        }
        if (!read.subscription) return answerReadBackwards(call, log);
        call.write(confirmationMessage());
        call.write(caughtUpMessage());
      },
      append: (request, answer) => {
        if (request.streamId === WRITTEN_VERSIONS_STREAM) answer(null, appendSuccess(0, 1234n));
      },
    });
    t = await startTestApp({ env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '1000' } });
    silent = true;
  });
  afterAll(async () => {
    await t?.close();
    await server?.close();
  });

  it('answers health and a write with 503, and metrics without the lag, instead of hanging', async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const ready = await t.http.get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.problems).toContain('event store unreachable');
      const metrics = await t.http.get('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).not.toMatch(/^projection_lag\{/m);
      const write = await t.http.post(withToken('customers')).send({ email: 'silent@x.io' });
      expect(write.status).toBe(503);
      expect(write.headers['retry-after']).toBeDefined();
      // Sent, and never answered: it may have been stored.
      expect(write.body.error.message).toBe('The service lost its storage while saving: the change may have been saved; retry with the same Idempotency-Key.');
    } finally {
      jest.restoreAllMocks();
    }
  });
});

describe('a create on the EventStoreDB protocol reads nothing back (scripted endpoint)', () => {
  let server: InMemoryEventStoreDb;
  let t: TestApp;
  /** Reads of records' streams asked for once `stalled`: left unanswered. */
  const unanswered: string[] = [];
  let stalled = false;
  beforeAll(async () => {
    server = await startInMemoryEventStoreDb({
      read: (_call, read) => {
        if (!stalled || !/^(customer|profile)-/.test(read.stream ?? '')) return false;
        unanswered.push(read.stream!);
        return true;
      },
    });
    t = await startTestApp({ env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '2000' } });
    stalled = true;
  });
  afterAll(async () => {
    await t?.close();
    await server?.close();
  });

  it('answers 201 with the record and its created time while every read of a record stream would stall', async () => {
    const before = Math.floor(Date.now() / 1000);
    const customer = await t.http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@x.io' });
    expect(customer.status).toBe(201);
    expect(customer.body.data.Customer).toMatchObject({ name: 'Ada', email: 'ada@x.io' });
    expect(customer.body.data.Customer.created).toBeGreaterThanOrEqual(before);
    expect(customer.body.data.Customer.created).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    const profile = await t.http.post(withToken('profiles')).send({ name: 'Shop', slug: `shop${randomUUID().slice(0, 8)}` });
    expect([profile.status, profile.body.error?.message, unanswered]).toEqual([201, undefined, []]);
    // Its event carries the business time its create answered with.
    const stored = server.log.find((e) => e.streamId === `customer-${customer.body.data.Customer.id}`)!;
    expect(Math.floor(Date.parse((stored.metadata as { occurredAt: string }).occurredAt) / 1000)).toBe(customer.body.data.Customer.created);
  });
});

describe('the service when a stream of its holds an event it did not write (scripted endpoint)', () => {
  // A customer event written by hand as bytes, after a good one: the client hands it over with
  // isJson false and its data as text (client 6.2.1 utils/convertGrpcEvent.ts).
  const handWritten: ScriptedEvent = { streamId: `customer-${randomUUID()}`, revision: 0, commit: 6000n };
  let server: ScriptedServer;
  let t: TestApp;
  /** What the service logs at warn and error, from its start. */
  const logged: string[] = [];
  beforeAll(async () => {
    for (const level of ['warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((...args: unknown[]) => void logged.push(`${level}: ${String(args[0])}`));
    }
    server = await startScriptedEventStoreDb({
      read: (call) => {
        const read = describeRead(call);
        if (read.stream !== undefined) {
          call.write(streamNotFoundMessage(read.stream));
          return call.end();
        }
        if (!read.subscription) return answerReadBackwards(call, [handWritten, ...log]);
        call.write(confirmationMessage());
        if (passesFilter(read, handWritten.streamId)) {
          call.write(eventMessage(log[0]));
          call.write(handWrittenMessage(handWritten));
        }
        call.write(checkpointMessage(handWritten.commit));
        call.write(caughtUpMessage());
      },
    });
    t = await startTestApp({ env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '2000' } });
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t?.close();
    await server?.close();
  });

  it('parks that event in the projections that follow it, named in readiness, rather than subscribing again for good', async () => {
    // Before: each subscription failed on it, was renewed after a pause, and failed again, with
    // nothing in readiness but "catching up". The subscription hands it over as unreadable.
    const parkedIn = (body: { projections?: { parked?: unknown }[] }) => (body.projections ?? []).filter((p) => p.parked).length;
    let ready = await t.http.get('/health/ready');
    for (const end = Date.now() + 10_000; Date.now() < end && parkedIn(ready.body) < 2;) {
      await new Promise((r) => setTimeout(r, 50));
      ready = await t.http.get('/health/ready');
    }
    const parked = { streams: 1, events: 1, streamIds: [handWritten.streamId] };
    expect(ready.body.projections).toEqual([
      expect.objectContaining({ name: 'profiles', failure: null }),
      expect.objectContaining({ name: 'customers', state: 'running', failure: null, parked }),
      expect.objectContaining({ name: 'feed', state: 'running', failure: null, parked }),
    ]);
    expect(logged.filter((line) => line.includes('Subscription failed'))).toEqual([]);
    const told = logged.filter((line) => line.includes(`Parked ${handWritten.streamId}@0`));
    expect(told.length).toBeGreaterThan(0);
    expect(told.every((line) => line.includes('it cannot be read: it is not JSON'))).toBe(true);
  });
});

describe('the service as a process, when a reconnection of its EventStoreDB client finds no leader (scripted endpoint)', () => {
  let server: InMemoryEventStoreDb;
  let child: ChildService;
  let dataDir: string;
  /** How the node answers appends: from its log, or as in the steps below. */
  let mode: 'log' | 'not ready once' | 'hold one' | 'electing' = 'log';
  let held: AppendAnswer | undefined;
  beforeAll(async () => {
    server = await startInMemoryEventStoreDb({
      // While electing, the node is too busy to answer gossip: a discovery waits for it.
      gossip: () => (mode === 'electing' ? undefined : [{ endpoint: server.endpoint, state: 'leader' }]),
      append: (_request, answer) => {
        if (mode === 'not ready once') {
          mode = 'log';
          answer(appendNotHandled('Server Is Not Ready'));
          return true;
        }
        if (mode === 'hold one') {
          held = answer;
          mode = 'electing';
          return true;
        }
        if (mode === 'electing') answer(appendNotHandled('Server Is Not Ready'));
        return mode === 'electing';
      },
    });
    dataDir = makeDataDir();
    // A second seed that refuses connections: a cluster's connection string, so the client discovers the leader.
    const seeds = `esdb://${server.endpoint.host}:${server.endpoint.port},127.0.0.1:1?tls=false&maxDiscoverAttempts=1`;
    child = await startChildService(dataDir, { EVENTSTORE_CONNECTION_STRING: seeds, STORE_TIMEOUT_MS: '3000', WORKERS: '1' });
  });
  afterAll(async () => {
    child?.process.kill('SIGTERM');
    await child?.exited;
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const create = (email: string) => request(child.url).post(withToken('customers')).send({ email });

  it('answers 503 and lives on, rather than ending on an unhandled rejection', async () => {
    // 1. An append answered "not ready" once: the adapter replaces its client (the next replacement
    //    is at least STORE_TIMEOUT_MS later), and the append is stored on the retry.
    mode = 'not ready once';
    expect((await create('one@x.io')).status).toBe(201);
    // 2. An append the node holds; the election starts. Another is answered "not ready": the client
    //    reconnects, and the adapter's retry waits in its discovery (gossip unanswered for 1 s).
    mode = 'hold one';
    const heldCreate = create('two@x.io').then(
      (res) => res.status,
      (error: Error) => error.message,
    );
    for (const end = Date.now() + 10_000; !held && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
    const otherCreate = create('three@x.io').then(
      (res) => res.status,
      (error: Error) => error.message,
    );
    await new Promise((r) => setTimeout(r, 600));
    // 3. The held append answered "not ready" while that discovery is under way. Before: its
    //    reconnection rejected unhandled once the discovery failed, and the process ended.
    held!(appendNotHandled('Server Is Not Ready'));
    expect(await Promise.all([heldCreate, otherCreate])).toEqual([503, 503]);
    await new Promise((r) => setTimeout(r, 1500));
    const exit = await Promise.race([child.exited, new Promise((r) => setTimeout(() => r('running'), 100))]);
    expect(exit).toBe('running');
    // What Node prints as it ends a process on an uncaught error.
    expect(child.output()).not.toMatch(/^Node\.js v\d+/m);
    // 4. The election over, writes go through again.
    mode = 'log';
    let status = 0;
    for (const end = Date.now() + 15_000; status !== 201 && Date.now() < end;) status = (await create('four@x.io')).status;
    expect(status).toBe(201);
  });
});

describe('the CLI on the EventStoreDB protocol (scripted endpoint)', () => {
  let server: ScriptedServer;
  let dataDir: string;
  beforeAll(async () => {
    server = await startServer();
    dataDir = makeDataDir();
    // The read models' SQLite file, as the service's first start leaves it: the CLI refuses a missing one.
    openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: false }).close();
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = () => ({ EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '2000' });

  it('shows lag as unknown in the status', async () => {
    const json = await runCli(['projections', 'status', '--json'], dataDir, env());
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      head: '5000',
      projections: [
        { name: 'profiles', lag: null },
        { name: 'customers', lag: null },
        { name: 'feed', lag: null },
      ],
    });
    const table = await runCli(['projections', 'status'], dataDir, env());
    expect(table.stdout).toMatch(/^profiles +1 +0 +unknown +- +- +-$/m);
  });

  it('rebuilds on an idle store, with progress counting events and no made-up total', async () => {
    const run = await runCli(['projections', 'rebuild', 'all', '--grace-seconds', '0', '--json'], dataDir, env());
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).rebuilt).toEqual([
      expect.objectContaining({ projection: 'profiles', generation: 2, events: 1 }),
      expect.objectContaining({ projection: 'customers', generation: 2, events: 1 }),
      expect.objectContaining({ projection: 'feed', generation: 2, events: 1 }),
    ]);
    expect(run.stderr).not.toMatch(/%|left/);
    expect(run.stderr).toMatch(/done +1 events in/);
  });

  it('says in one line that EventStoreDB is unreachable, with no stack trace', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const run = await runCli(['projections', 'status'], dataDir, {
      EVENTSTORE_CONNECTION_STRING: `esdb://127.0.0.1:${port}?tls=false`,
      STORE_TIMEOUT_MS: '1000',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^Events: EventStoreDB \(EVENTSTORE_CONNECTION_STRING\); read models: the SQLite file .+\nEventStoreDB is unreachable: .+\n$/);
  });
});

describe('the import on the EventStoreDB protocol (in-memory scripted endpoint)', () => {
  let server: InMemoryEventStoreDb;
  let dataDir: string;
  const gone = randomUUID();
  const goneProfile = randomUUID();
  const deletedForGood = (streamId: string) => streamId === `customer-${gone}` || streamId === `profile-${goneProfile}`;
  const reading = { now: 0, most: 0 };
  beforeAll(async () => {
    // Streams an operator deleted for good: the server refuses appends to them and reads of them as
    // Deleted (appendStreamDeleted, failStreamDeleted); every other stream is kept in memory.
    server = await startInMemoryEventStoreDb({
      append: (request, answer) => deletedForGood(request.streamId) && (answer(appendStreamDeleted(request)), true),
      read: (call, read) => {
        if (read.stream === undefined) return false;
        if (deletedForGood(read.stream)) failStreamDeleted(call, read.stream);
        else {
          // Each stream read answered a moment later, to count how many the import has under way.
          reading.now++;
          reading.most = Math.max(reading.most, reading.now);
          setTimeout(() => {
            reading.now--;
            answerStreamRead(call, server.log);
          }, 2);
        }
        return true;
      },
    });
    dataDir = makeDataDir();
    openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: false }).close();
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses the row whose stream was deleted for good, naming its line, and imports every other row', async () => {
    const ids = [randomUUID(), gone, randomUUID()];
    const file = join(dataDir, 'customers.ndjson');
    writeFileSync(file, ids.map((id, i) => JSON.stringify({ id, created: 1_600_000_000 + i, name: `Row ${i}`, email: `row${i}@x.io` })).join('\n') + '\n');
    const run = await runCli(['import', 'customers', file, '--account', 'acc-1'], dataDir, {
      EVENTSTORE_CONNECTION_STRING: server.connectionString,
      STORE_TIMEOUT_MS: '2000',
      ACCESS_TOKENS: 'tok-1:acc-1',
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^line 2: id: id is the id of a record whose stream was deleted for good: it cannot be imported$/m);
    expect(run.stdout).toMatch(/Rows read: 3, created: 2, skipped: 0, refused: 1/);
    const created = server.log.filter((e) => e.type === 'CustomerCreated').map((e) => e.streamId);
    expect(created.sort()).toEqual([`customer-${ids[0]}`, `customer-${ids[2]}`].sort());
  });

  it('imports into read models already there: reads a batch a few dozen at a time, and waits for its own kind of read models only', async () => {
    const file = join(dataDir, 'more.ndjson');
    writeFileSync(
      file,
      Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: randomUUID(), created: 1_600_000_000 + i, name: `Row ${i}`, email: `row${i}@x.io` })).join(
        '\n',
      ) + '\n',
    );
    reading.most = 0;
    const run = await runCli(['import', 'customers', file, '--account', 'acc-1'], dataDir, {
      EVENTSTORE_CONNECTION_STRING: server.connectionString,
      STORE_TIMEOUT_MS: '2000',
      ACCESS_TOKENS: 'tok-1:acc-1',
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Rows read: 200, created: 200, skipped: 0, refused: 0/);
    // The customers' read models waited for, not the profiles' one, whose subscription (filtered to
    // profiles) this endpoint sends no checkpoint past them: before, the import waited for it for good.
    expect(run.stderr).toContain('Read models and the change feed have every row');
    expect(reading.most).toBeGreaterThan(1);
    expect(reading.most).toBeLessThanOrEqual(32);
  });

  it('ends on a last profile refused after its slug was claimed, waiting for the profiles only, and gives its slug claim back', async () => {
    const env = { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '2000', ACCESS_TOKENS: 'tok-1:acc-1' };
    const slug = `lost${randomUUID().slice(0, 8)}`;
    const ids = [randomUUID(), randomUUID(), goneProfile];
    const file = join(dataDir, 'profiles.ndjson');
    const row = (id: string, i: number, rowSlug: string) => JSON.stringify({ id, created: 1_600_000_000 + i, name: `Shop ${i}`, slug: rowSlug });
    writeFileSync(file, ids.map((id, i) => row(id, i, i === 2 ? slug : `shop${i}${randomUUID().slice(0, 8)}`)).join('\n') + '\n');
    const run = await runCli(['import', 'profiles', file, '--account', 'acc-1'], dataDir, env);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^line 3: id: id is the id of a record whose stream was deleted for good: it cannot be imported$/m);
    expect(run.stdout).toMatch(/Rows read: 3, created: 2, skipped: 0, refused: 1/);
    const created = server.log.filter((e) => e.type === 'ProfileCreated').map((e) => e.streamId);
    expect(created.sort()).toEqual([`profile-${ids[0]}`, `profile-${ids[1]}`].sort());
    // The store's last events are the refused row's slug claim and its release, which no profile
    // subscription is sent a checkpoint past: the command waited for the last profile created, not
    // for that head. (The read models have checkpoints from the tests before: the profiles' one
    // follows from its own rather than being rebuilt up to the head, as a first import's would be.)
    expect(server.log.slice(-2)).toMatchObject([
      { streamId: `profile_slug-${slug}`, type: 'SlugReserved', data: { slug, profileId: goneProfile } },
      { streamId: `profile_slug-${slug}`, type: 'SlugReleased', data: { slug, profileId: goneProfile } },
    ]);
    expect(run.stderr).toContain('Read models and the change feed have every row');

    // The slug is free at once for another profile, as after a create the API refused.
    const otherId = randomUUID();
    const other = join(dataDir, 'other.ndjson');
    writeFileSync(other, row(otherId, 9, slug) + '\n');
    const next = await runCli(['import', 'profiles', other, '--account', 'acc-1'], dataDir, env);
    expect([next.code, next.stdout]).toEqual([0, expect.stringMatching(/Rows read: 1, created: 1, skipped: 0, refused: 0/)]);
    const slugStream = server.log.filter((e) => e.streamId === `profile_slug-${slug}`);
    expect(slugStream[slugStream.length - 1]).toMatchObject({ type: 'SlugReserved', data: { slug, profileId: otherId } });
  });
});
