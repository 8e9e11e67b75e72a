import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import request from 'supertest';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { customerProjection } from '../../src/customers/customer.projection';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { startChildService } from '../support/child-service';
import { makeDataDir, withToken } from '../support/test-app';
import { describeOnSqlite, TEST_WORKERS } from '../support/stores';

interface Outcome {
  status?: number;
  connection?: string;
  id?: string;
  /** The connection error's code, when there was no answer. */
  error?: string;
  at: number;
}

/**
 * A customer create on a connection of its own. With `hold`, only the headers are sent: `accepted`
 * resolves when the server has read them (it answers 100 Continue), and `send()` sends the body.
 */
function create(base: string, n: number, { hold = false } = {}) {
  const text = JSON.stringify({ name: `S${n}`, email: `s${n}@example.com` });
  const { hostname, port } = new URL(base);
  const req = httpRequest({
    hostname,
    port,
    path: withToken('customers'),
    method: 'POST',
    agent: false,
    headers: {
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(text),
      ...(hold ? { Expect: '100-continue' } : {}),
    },
  });
  const accepted = hold
    ? new Promise<void>((resolve, reject) => {
        req.once('continue', resolve);
        req.once('error', reject);
      })
    : Promise.resolve();
  const answered = new Promise<Outcome>((resolve) => {
    req.once('response', (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, id: JSON.parse(body).data?.Customer?.id, at: Date.now() }));
    });
    req.once('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message, at: Date.now() }));
  });
  if (hold) req.flushHeaders();
  else req.end(text);
  return { accepted, answered, send: () => (req.end(text), answered) };
}

describeOnSqlite('graceful shutdown', () => {
  let dataDir: string;
  beforeEach(() => (dataDir = makeDataDir()));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('on SIGTERM under load: answers every request in flight, refuses new connections, saves the checkpoints, exits 0', async () => {
    const child = await startChildService(dataDir);
    let n = 0;
    let stopped = false;
    const loadOutcomes: Outcome[] = [];
    // Clients writing one after another on fresh connections, until the service is gone.
    const loops = Array.from({ length: 4 }, async () => {
      while (!stopped) {
        const outcome = await create(child.url, n++).answered;
        loadOutcomes.push(outcome);
        if (outcome.error) return;
      }
    });
    while (loadOutcomes.filter((o) => o.status === 201).length < 20) await new Promise((r) => setTimeout(r, 20));

    // Requests the service has begun to read when the signal comes; their bodies follow it.
    const held = Array.from({ length: 8 }, () => create(child.url, n++, { hold: true }));
    await Promise.all(held.map((h) => h.accepted));
    const signalledAt = Date.now();
    child.process.kill('SIGTERM');
    await child.waitForOutput(/Shutting down on SIGTERM/);
    // New connections are refused: at once with one process. With workers, the primary's line
    // comes before the workers hear the signal, and it hands a connection made meanwhile to a
    // worker still listening, which answers it; refused once every worker has closed its listener.
    let late = await create(child.url, n++).answered;
    if (TEST_WORKERS) {
      for (const end = Date.now() + 5_000; !late.error && Date.now() < end; late = await create(child.url, n++).answered) loadOutcomes.push(late);
    }
    expect(late.error).toBe('ECONNREFUSED');

    const heldOutcomes = await Promise.all(held.map((h) => h.send()));
    for (const outcome of heldOutcomes) {
      expect(outcome).toMatchObject({ status: 201, connection: 'close' });
    }
    stopped = true;
    await Promise.all(loops);
    expect(await child.exited).toBe(0);
    expect(child.output()).toMatch(/"msg":"Stopped"/);

    // Every answer was a success; a client saw a connection fail only once the service was stopping.
    for (const outcome of loadOutcomes) {
      if (outcome.error) expect(outcome.at).toBeGreaterThanOrEqual(signalledAt);
      else expect(outcome.status).toBe(201);
    }

    // The projectors stopped after their last batch and saved it: the checkpoint is the store's head.
    const db = openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: false });
    try {
      const head = await new SqliteEventStore(db).headPosition();
      const reads = new SqliteReadStore(db);
      await reads.ensureCollection(customerProjection.schema);
      expect((await reads.status('customers')).live.position).toEqual(head);
    } finally {
      db.close();
    }

    // A restart shows every answered write, and nothing else.
    const written = [...loadOutcomes, ...heldOutcomes].filter((o) => o.status === 201).map((o) => o.id!);
    const second = await startChildService(dataDir);
    try {
      const list = await request(second.url).get(withToken('customers?limit=1')).expect(200);
      expect(list.headers['x-total-count']).toBe(String(written.length));
      for (const id of written)
        await request(second.url)
          .get(withToken(`customers/${id}`))
          .expect(200);
    } finally {
      second.process.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  });

  it('on SIGTERM answers a waiting long-poll of the change feed and ends its event streams at once, not at the end of the grace', async () => {
    const child = await startChildService(dataDir);
    const polled = fetch(`${child.url}${withToken('events?wait=30')}`).then(async (res) => ({ status: res.status, body: await res.json() }));
    const stream = await fetch(`${child.url}${withToken('events')}`, { headers: { Accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    const streamed = stream.text();
    // Both wait for news by now; the signal comes before any.
    await new Promise((r) => setTimeout(r, 300));
    const signalledAt = Date.now();
    child.process.kill('SIGTERM');
    expect(await polled).toEqual({ status: 200, body: { data: [], success: true, status: 200 } });
    expect(await streamed).toBe('retry: 1000\n\n');
    expect(await child.exited).toBe(0);
    // The grace is 10 s: neither held the service that long.
    expect(Date.now() - signalledAt).toBeLessThan(8000);
  });
});
