import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { Database, openSqliteDatabase } from '../../src/storage/sqlite-database';
import { runCli } from '../support/cli';
import { describeOnSqlite } from '../support/stores';
import { ACCOUNT_IDS, JSON_CT, startTestApp, TestApp, withToken } from '../support/test-app';

const event = (type: string, data: Record<string, unknown>): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  // With its business time, as the service's own events carry it.
  metadata: { accountId: ACCOUNT_IDS.a, correlationId: 'by-hand', causationId: 'by-hand', occurredAt: new Date().toISOString() },
});

/** Asks `read` again until `done` holds of its answer, a bounded number of times. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, tries = 500): Promise<T> {
  let value = await read();
  for (let n = 0; n < tries && !done(value); n++) {
    await new Promise((r) => setTimeout(r, 20));
    value = await read();
  }
  return value;
}

/** The value of a sample of `name` whose labels include these, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

describeOnSqlite('an event a read model cannot fold, parked', () => {
  let service: TestApp;
  let poisoned: { id: string; stream: string };
  let healthy: { id: string; stream: string };

  const create = async (name: string) => {
    const res = await service.http
      .post(withToken('customers'))
      .set('Content-Type', JSON_CT)
      .send({ name, email: `${name.toLowerCase()}@example.com` });
    expect(res.status).toBe(201);
    const id = res.body.data.Customer.id as string;
    return { id, stream: `customer-${id}` };
  };
  const read = async (id: string) => (await service.http.get(withToken(`customers/${id}`))).body.data?.[0]?.Customer;
  const parkedJson = async () => {
    const { code, stdout, stderr } = await runCli(['projections', 'parked', '--json'], service.dataDir);
    expect({ code, stderr: stderr.includes('Error') ? stderr : '' }).toEqual({ code: 0, stderr: '' });
    return (JSON.parse(stdout) as { readModels: { name: string; parked: Record<string, unknown>[]; skipped: Record<string, unknown>[] }[] }).readModels.find(
      (m) => m.name === 'customers',
    )!;
  };
  const readiness = async () => service.http.get('/health/ready');
  /** Appended by hand, to the store's file, as an operator's tool would: not through the service's own store. */
  const byHand = async (streamId: string, events: NewEvent[], expected: number) => {
    const store = new SqliteEventStore(openSqliteDatabase(join(service.dataDir, 'service.sqlite'), { durable: true }));
    try {
      await store.appendToStream(streamId, events, expected);
    } finally {
      await store.close();
    }
  };

  beforeAll(async () => {
    service = await startTestApp();
    poisoned = await create('Ada');
    healthy = await create('Bea');
    // Appended by hand: a type no code knows, then an event that could be folded, behind it.
    await byHand(poisoned.stream, [event('CustomerRenamedByHand', { name: 'Ada Byron' })], 0);
    await byHand(poisoned.stream, [event('CustomerUpdated', { company: 'Analytical Engines' })], 1);
  });
  afterAll(() => service?.close());

  it('leaves every other stream current: a write to another customer reads back at once', async () => {
    const res = await service.http
      .put(withToken(`customers/${healthy.id}`))
      .set('Content-Type', JSON_CT)
      .send({ company: 'Looms' });
    expect(res.status).toBe(200);
    expect(await read(healthy.id)).toMatchObject({ company: 'Looms' });
    // The parked stream stays as it was before the event it cannot fold.
    expect(await read(poisoned.id)).toMatchObject({ name: 'Ada', company: '' });
  });

  it('stays ready, naming the parked stream, and counts its events in projection_parked_events', async () => {
    const ready = await until(readiness, (r) => r.body.projections?.find((p: { name: string }) => p.name === 'customers')?.parked !== undefined);
    expect(ready.status).toBe(200);
    expect(ready.body.projections.find((p: { name: string }) => p.name === 'customers')).toMatchObject({
      state: 'running',
      parked: { streams: 1, events: 2, streamIds: [poisoned.stream] },
    });
    const metrics = await service.http.get('/metrics').expect(200);
    expect(sample(metrics.text, 'projection_parked_events', { read_model: 'customers' })).toBe(2);
    expect(sample(metrics.text, 'projection_parked_events', { read_model: 'profiles' })).toBe(0);
  });

  it('is listed by projections parked: its first parked event, the error and what waits behind it', async () => {
    const customers = await parkedJson();
    expect(customers.parked).toEqual([
      {
        streamId: poisoned.stream,
        first: {
          revision: 1,
          position: expect.any(String),
          type: 'CustomerRenamedByHand',
          error: `Unknown event type CustomerRenamedByHand in ${poisoned.stream}`,
        },
        waiting: 1,
        parkedAt: expect.any(String),
        request: null,
      },
    ]);
    const table = await runCli(['projections', 'parked'], service.dataDir);
    expect(table.stdout).toContain(`customers   ${poisoned.stream}  1 (position`);
  });

  it('drops the first parked event for good on projections skip, recorded with who, when and why, and folds the events after it', async () => {
    const skip = await runCli(['projections', 'skip', poisoned.stream, '--reason', 'typed by hand'], service.dataDir);
    expect(skip).toMatchObject({ code: 0, stdout: `customers: ${poisoned.stream} unparked: its parked events are folded\n` });
    expect(skip.stderr).toContain('waiting for it');
    expect(await read(poisoned.id)).toMatchObject({ name: 'Ada', company: 'Analytical Engines' });
    const customers = await parkedJson();
    expect(customers.parked).toEqual([]);
    expect(customers.skipped).toEqual([
      expect.objectContaining({
        streamId: poisoned.stream,
        revision: 1,
        type: 'CustomerRenamedByHand',
        by: userInfo().username,
        reason: 'typed by hand',
        at: expect.any(String),
      }),
    ]);
    // Later events of the stream fold as they come (appended by hand: the service's own writes fold the stream, which still holds a type no code knows).
    await byHand(poisoned.stream, [event('CustomerUpdated', { tel: '021555' })], 2);
    expect(
      await until(
        () => read(poisoned.id),
        (c) => c?.tel === '021555',
      ),
    ).toMatchObject({ tel: '021555' });
    expect((await readiness()).body.projections.find((p: { name: string }) => p.name === 'customers').parked).toBeUndefined();
  });

  it('folds a parked event again on projections retry once it can be (the fix deployed), and unparks its stream', async () => {
    const { id: eventId } = event('x', {});
    await byHand(healthy.stream, [{ ...event('CustomerTypoByHand', { company: 'Jacquard' }), id: eventId }], 1);
    await until(parkedJson, (m) => m.parked.length === 1);
    const stillBroken = await runCli(['projections', 'retry', 'all'], service.dataDir);
    expect(stillBroken.code).toBe(1);
    expect(stillBroken.stdout).toContain(`customers: ${healthy.stream} is still parked, at revision 2: Unknown event type CustomerTypoByHand`);
    // The fix: the event's type made one the code folds.
    const db = new Database(join(service.dataDir, 'service.sqlite'));
    try {
      db.prepare("UPDATE events SET type = 'CustomerUpdated' WHERE event_id = ?").run(eventId);
    } finally {
      db.close();
    }
    const retry = await runCli(['projections', 'retry', healthy.stream], service.dataDir);
    expect(retry).toMatchObject({ code: 0, stdout: `customers: ${healthy.stream} unparked: its parked events are folded\n` });
    expect(await read(healthy.id)).toMatchObject({ company: 'Jacquard' });
    await expect(parkedJson()).resolves.toMatchObject({ parked: [] });
  });

  it('parks an event of a version newer than this build reads (a rollback), in each read model that meets it, and folds it on retry once it reads', async () => {
    const newer = await create('Cleo');
    const stamped = event('CustomerUpdated', { company: 'Tomorrow' });
    await byHand(newer.stream, [{ ...stamped, metadata: { ...stamped.metadata, eventVersion: 3 } }], 0);
    const error = `it cannot be read: it is CustomerUpdated version 3, newer than the 2 this version of the service reads`;
    const customers = await until(parkedJson, (m) => m.parked.length === 1);
    expect(customers.parked).toEqual([
      expect.objectContaining({ streamId: newer.stream, first: expect.objectContaining({ revision: 1, type: 'CustomerUpdated', error }) }),
    ]);
    // Readiness stays up. The feed's index keeps only the event's place, and indexes it; a page that
    // would show it answers 503 until a build that reads it serves (consumers resume from their cursor).
    const ready = await readiness();
    expect(ready.status).toBe(200);
    expect(ready.body.projections.find((p: { name: string }) => p.name === 'feed').parked).toBeUndefined();
    const page = await until(
      () => service.http.get(withToken('events?limit=1000')),
      (r) => r.status === 503,
    );
    expect(page.body.error.message).toBe('A change to this record cannot be read by this version of the service; try again later.');
    expect(await read(newer.id)).toMatchObject({ name: 'Cleo', company: '' });

    // The fix: the build that reads version 3, stood for here by the event rewritten in version 2.
    const db = new Database(join(service.dataDir, 'service.sqlite'));
    try {
      db.prepare("UPDATE events SET metadata = json_set(metadata, '$.eventVersion', 2) WHERE event_id = ?").run(stamped.id);
    } finally {
      db.close();
    }
    const retry = await runCli(['projections', 'retry', 'all'], service.dataDir);
    expect(retry).toMatchObject({ code: 0, stdout: `customers: ${newer.stream} unparked: its parked events are folded\n` });
    expect(await read(newer.id)).toMatchObject({ company: 'Tomorrow' });
  });
});
