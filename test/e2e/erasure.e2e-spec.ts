import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { runCli, spawnCli } from '../support/cli';
import { uid, uniqueEmail, uniqueMobile } from '../support/http-assertions';
import { describeOnSqlite } from '../support/stores';
import { ACCOUNT_IDS, filesContaining, JSON_CT, makeDataDir, startTestApp, TestApp, TOKENS, withQuery, withToken } from '../support/test-app';

/** docs/api.md "Erasure", over HTTP: what an erased record still answers, and what it no longer does. */
describe('erasure', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  const createCustomer = async (fields: Record<string, unknown> = {}) => {
    const res = await t.http
      .post(withToken('customers'))
      .send({ name: uid('Name'), email: uniqueEmail(), mobile: uniqueMobile(), address: uid('Street'), ...fields })
      .expect(201);
    return res.body.data.Customer.id as string;
  };
  const erase = (resource: string, id: string, token: string = TOKENS.a) => t.http.post(withToken(`${resource}/${id}/erase`, token));

  it('erases a live customer: 200, then it exists for no read, list, update, delete or as-of read', async () => {
    const email = uniqueEmail();
    const id = await createCustomer({ email });
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ company: uid('Co') })
      .expect(200);
    const before = Math.floor(Date.now() / 1000);

    const res = await erase('customers', id).expect(200);
    expect(res.headers['content-type']).toBe(JSON_CT);
    expect(res.body).toEqual({ data: { Customer: { id } }, success: true, status: 200, message: 'Customer erased.' });

    await t.http.get(withToken(`customers/${id}`)).expect(404);
    for (const asOf of [before, before + 3600]) await t.http.get(withToken(withQuery(`customers/${id}`, { as_of: asOf }))).expect(404);
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ name: 'back' })
      .expect(404);
    await t.http.delete(withToken(`customers/${id}`)).expect(404);
    const list = await t.http.get(withToken(withQuery('customers', { email }))).expect(200);
    expect(list.body.data).toEqual([]);
    expect(list.headers['x-total-count']).toBe('0');
  });

  it('keeps every history entry with null for each value, and ends with the erasure by the erasing account', async () => {
    const id = await createCustomer({ tel: '021' });
    await t.http
      .put(withToken(`customers/${id}`))
      .send({ tel: '022', company: 'Acme' })
      .expect(200);
    await t.http.delete(withToken(`customers/${id}`)).expect(200);
    const before = (await t.http.get(withToken(`customers/${id}/history`)).expect(200)).body.data;

    await erase('customers', id, TOKENS.a2).expect(200);

    const after = await t.http.get(withToken(`customers/${id}/history`)).expect(200);
    expect(after.headers['x-total-count']).toBe('4');
    const entries = after.body.data;
    expect(entries.slice(0, 3).map(({ changes: _changes, ...rest }: { changes: unknown }) => rest)).toEqual(
      before.map(({ changes: _changes, ...rest }: { changes: unknown }) => rest),
    );
    expect(entries.map((e: { changes: unknown }) => e.changes)).toEqual([
      { name: null, email: null, mobile: null, address: null, tel: null },
      { tel: null, company: null },
      {},
      {},
    ]);
    expect(entries[3]).toEqual({ event: 'CustomerErased', revision: 3, occurred: expect.any(String), actor: ACCOUNT_IDS.a, changes: {} });
  });

  it('erases a deleted record, and answers the same 200 when erasing again', async () => {
    const id = await createCustomer();
    await t.http.delete(withToken(`customers/${id}`)).expect(200);
    const first = await erase('customers', id).expect(200);
    const second = await erase('customers', id).expect(200);
    expect(second.body).toEqual(first.body);
    const history = await t.http.get(withToken(`customers/${id}/history`)).expect(200);
    expect(history.body.data.map((e: { event: string }) => e.event)).toEqual(['CustomerCreated', 'CustomerDeleted', 'CustomerErased']);
  });

  it("answers 404 for another account's record, an unknown id and a malformed one, and leaves the record alone", async () => {
    const id = await createCustomer();
    const res = await erase('customers', id, TOKENS.b).expect(404);
    expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Customer not found.' });
    await erase('customers', '00000000-0000-4000-8000-000000000000').expect(404);
    await erase('customers', 'not-a-uuid').expect(404);
    await t.http.get(withToken(`customers/${id}`)).expect(200);
  });

  it('takes no body: none, or {} as JSON; a field in it is 400 naming it', async () => {
    const id = await createCustomer();
    await t.http
      .post(withToken(`customers/${id}/erase`))
      .set('Content-Type', 'application/json')
      .send('{}')
      .expect(200);
    const res = await t.http
      .post(withToken(`customers/${id}/erase`))
      .send({ reason: 'asked' })
      .expect(400);
    expect(res.body.error.details).toEqual([{ field: 'reason', message: 'this operation takes no body fields' }]);
    await t.http
      .post(withToken(`customers/${id}/erase`))
      .set('Content-Type', 'text/plain')
      .send('x')
      .expect(415);
  });

  it('frees an erased profile’s slug', async () => {
    const slug = uid('Shop');
    const created = await t.http
      .post(withToken('profiles'))
      .send({ name: uid('Seller'), slug })
      .expect(201);
    const id = created.body.data.Profile.id;
    await t.http.post(withToken('profiles', TOKENS.b)).send({ slug }).expect(409);

    const res = await erase('profiles', id).expect(200);
    expect(res.body).toEqual({ data: { Profile: { id } }, success: true, status: 200, message: 'Profile erased.' });
    await t.http.get(withToken(`profiles/${id}`)).expect(404);
    await t.http.post(withToken('profiles', TOKENS.b)).send({ slug: slug.toUpperCase() }).expect(201);
  });

  it('answers 409 to an Idempotency-Key replay of a create whose record is erased, and creates nothing', async () => {
    const body = { name: uid('Name'), email: uniqueEmail() };
    const key = uid('key');
    const created = await t.http.post(withToken('customers')).set('Idempotency-Key', key).send(body).expect(201);
    const replay = await t.http.post(withToken('customers')).set('Idempotency-Key', key).send(body).expect(201);
    expect(replay.body).toEqual(created.body);

    await erase('customers', created.body.data.Customer.id).expect(200);
    const res = await t.http.post(withToken('customers')).set('Idempotency-Key', key).send(body).expect(409);
    expect(res.body.error.details).toEqual([{ field: 'Idempotency-Key', message: 'Idempotency-Key belongs to an erased record' }]);
    const list = await t.http.get(withToken(withQuery('customers', { email: body.email }))).expect(200);
    expect(list.body.data).toEqual([]);
  });
});

describeOnSqlite('erasure leaves no readable copy in the data directory', () => {
  /** Values a test customer carries, each unique to this run, as they are stored (case as sent, and lowercased). */
  const personal = () => {
    const fields = {
      name: uid('Ferdowsi'),
      email: `${uid('Poet')}@Example.com`,
      mobile: uniqueMobile(),
      address: uid('Tus'),
      company: uid('Shahnameh'),
    };
    return { fields, values: [...Object.values(fields), fields.email.toLowerCase(), fields.company.toLowerCase()] };
  };

  it('finds none of an erased customer’s values in any file, after writes, an idempotent create and a rebuild', async () => {
    const t = await startTestApp();
    try {
      const { fields, values } = personal();
      const changed = uid('Nishapur');
      values.push(changed);
      const created = await t.http.post(withToken('customers')).set('Idempotency-Key', uid('key')).send(fields).expect(201);
      const id = created.body.data.Customer.id;
      await t.http
        .put(withToken(`customers/${id}`))
        .send({ address: changed })
        .expect(200);
      // A retired generation with the values in it: a rebuild swaps a new one in, and an operator's
      // Ctrl-C in its grace period leaves the old one for later.
      const rebuild = spawnCli(['projections', 'rebuild', 'customers', '--grace-seconds', '3600'], t.dataDir);
      await rebuild.waitForStderr(/are live/);
      rebuild.process.kill('SIGINT');
      await rebuild.exited;
      // The grep sees them while the customer is there: the read model holds them in plain.
      expect(filesContaining(t.dataDir, values)).not.toEqual([]);

      await t.http.post(withToken(`customers/${id}/erase`)).expect(200);

      expect(filesContaining(t.dataDir, values)).toEqual([]);
      // The events are still there, readable as events.
      const history = await t.http.get(withToken(`customers/${id}/history`)).expect(200);
      expect(history.body.data.map((e: { event: string }) => e.event)).toEqual(['CustomerCreated', 'CustomerUpdated', 'CustomerErased']);
    } finally {
      await t.close();
    }
  });

  it('finishes an erasure a crash cut short after the key was destroyed: the restart scrubs the read models and appends the erasure', async () => {
    const first = await startTestApp();
    const { fields, values } = personal();
    const created = await first.http.post(withToken('customers')).send(fields).expect(201);
    const id = created.body.data.Customer.id;
    await first.close({ keepData: true });

    // The state the crash leaves: erasure's first step done (the key destroyed, the erasure pending), nothing after it.
    const keys = new SqliteKeyStore(openSqliteDatabase(join(first.dataDir, 'keys.sqlite'), { durable: true }));
    await keys.destroy(`customer-${id}`, ACCOUNT_IDS.a);
    await keys.close();
    expect(filesContaining(first.dataDir, values)).not.toEqual([]);

    const t = await startTestApp({ dataDir: first.dataDir });
    try {
      expect(filesContaining(t.dataDir, values)).toEqual([]);
      await t.http.get(withToken(`customers/${id}`)).expect(404);
      const history = await t.http.get(withToken(`customers/${id}/history`)).expect(200);
      expect(history.body.data.map((e: { event: string; actor: string }) => [e.event, e.actor])).toEqual([
        ['CustomerCreated', ACCOUNT_IDS.a],
        ['CustomerErased', ACCOUNT_IDS.a],
      ]);
      // Finished: erasing again changes nothing.
      await t.http.post(withToken(`customers/${id}/erase`)).expect(200);
      expect((await t.http.get(withToken(`customers/${id}/history`))).headers['x-total-count']).toBe('2');
    } finally {
      await t.close();
    }
  });

  it('rebuilds the read models after an erasure: the record stays gone, the others come back', async () => {
    const t = await startTestApp();
    try {
      const erased = await t.http.post(withToken('customers')).send(personal().fields).expect(201);
      // Enough records that the CLI opens a batch's values in its worker thread (256 sealed values or more).
      const kept = new Map<string, string>();
      for (let i = 0; i < 300; i += 25) {
        const made = await Promise.all(Array.from({ length: 25 }, () => t.http.post(withToken('customers')).send(personal().fields).expect(201)));
        for (const res of made) kept.set(res.body.data.Customer.id, res.body.data.Customer.name);
      }
      await t.http.post(withToken(`customers/${erased.body.data.Customer.id}/erase`)).expect(200);

      const rebuild = await runCli(['projections', 'rebuild', 'all', '--grace-seconds', '0'], t.dataDir);
      expect(rebuild.code).toBe(0);

      await t.http.get(withToken(`customers/${erased.body.data.Customer.id}`)).expect(404);
      const rebuilt = new Map<string, string>();
      for (let page = 1; page <= 3; page++) {
        const list = await t.http.get(withToken(withQuery('customers', { limit: 100, page }))).expect(200);
        for (const item of list.body.data) rebuilt.set(item.Customer.id, item.Customer.name);
      }
      expect(rebuilt).toEqual(kept);
    } finally {
      await t.close();
    }
  });
});

describeOnSqlite('events written before encryption (schema version 1, plaintext)', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

  it('are sealed in place at the first start; an Idempotency-Key answer still replays; erasure then leaves nothing', async () => {
    const dataDir = makeDataDir();
    const id = randomUUID();
    const fields = { name: uid('Hafez'), email: `${uid('Shiraz')}@example.com` };
    const values = [fields.name, fields.email];
    const body = { data: { Customer: { id, ...fields } }, success: true, status: 201 };
    const key = uid('key');
    const metadata = (correlationId: string) => ({ accountId: ACCOUNT_IDS.a, correlationId, causationId: randomUUID(), schemaVersion: 1 });
    // The store as the previous version left it: written through the bare SQLite adapter.
    const old = new SqliteEventStore(openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: true }));
    const idempotency = `idempotency-${sha256(`${ACCOUNT_IDS.a}\n${key}`)}`;
    const fingerprint = sha256(JSON.stringify(['customers', Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1))]));
    await old.appendToStream(
      idempotency,
      [{ id: randomUUID(), type: 'IdempotencyKeyClaimed', data: { fingerprint, recordId: id }, metadata: metadata('r1') }],
      'no_stream',
    );
    await old.appendToStream(`customer-${id}`, [{ id: randomUUID(), type: 'CustomerCreated', data: fields, metadata: metadata('r1') }], 'no_stream');
    await old.appendToStream(idempotency, [{ id: randomUUID(), type: 'IdempotencyKeyAnswered', data: { body, revision: 0 }, metadata: metadata('r1') }], 0);
    await old.close();
    expect(filesContaining(dataDir, values).length).toBeGreaterThan(0);

    const t = await startTestApp({ dataDir });
    try {
      const db = openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: false });
      const rows = db.prepare('SELECT data, metadata FROM events').all() as { data: string; metadata: string }[];
      db.close();
      expect(rows.map((r) => JSON.parse(r.metadata).schemaVersion)).toEqual([2, 2, 2]);
      for (const value of values) expect(rows.some((r) => r.data.includes(value) || r.data.includes(fingerprint))).toBe(false);

      // The read models fold the old events after the start, and reads answer 503 until then: wait for them (a write would wait itself).
      let read = await t.http.get(withToken(`customers/${id}`));
      for (const until = Date.now() + 30_000; read.status === 503 && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 50));
        read = await t.http.get(withToken(`customers/${id}`));
      }
      expect(read.status).toBe(200);
      expect(read.body.data[0].Customer).toMatchObject(fields);
      const replay = await t.http.post(withToken('customers')).set('Idempotency-Key', key).send(fields).expect(201);
      expect(replay.body).toEqual(body);
      await t.http
        .post(withToken('customers'))
        .set('Idempotency-Key', key)
        .send({ ...fields, name: 'other' })
        .expect(409);

      await t.http.post(withToken(`customers/${id}/erase`)).expect(200);
      expect(filesContaining(dataDir, values)).toEqual([]);
      const history = await t.http.get(withToken(`customers/${id}/history`)).expect(200);
      expect(history.body.data.map((e: { changes: unknown }) => e.changes)).toEqual([{ name: null, email: null }, {}]);
    } finally {
      await t.close();
    }
  });
});
