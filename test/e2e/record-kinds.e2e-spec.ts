import { loadConfig } from '../../src/config/config';
import { rebuildProjections } from '../../src/projections/rebuild';
import { readModelsOf } from '../../src/read-models';
import { REGISTERED_KINDS } from '../../src/record-kinds';
import { openStores } from '../../src/stores/stores.module';
import { type FeedEntry, readFeed } from '../support/feed-client';
import { uid } from '../support/http-assertions';
import { describeOnSqlite, describeUnlessWorkers, liveStoreEnv } from '../support/stores';
import { filesContaining, startTestApp, TestApp, TOKENS, withQuery, withToken } from '../support/test-app';
import { SUPPLIERS } from '../support/third-kind/supplier.kind';

type Rec = Record<string, unknown>;

/**
 * A kind of record the service does not have (suppliers, test/support/third-kind/), given to the
 * app as its definition alone: its routes, read model, sealing, history, erasure, change feed,
 * OpenAPI document and rebuild all come from that, over real sockets on the embedded store.
 */
describeUnlessWorkers('a kind of record given to the app as its definition', 'the kind is defined in the tests, so it needs the app in-process', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ extraKinds: [SUPPLIERS] })));
  afterAll(() => t.close());

  const createSupplier = async (fields: Rec, token: string = TOKENS.a) =>
    (await t.http.post(withToken('suppliers', token)).send(fields).expect(201)).body.data.Supplier as Rec & { id: string };
  const list = async (query: Record<string, string>, token: string = TOKENS.a) =>
    (await t.http.get(withToken(withQuery('suppliers', query), token)).expect(200)).body.data.map((item: { Supplier: Rec }) => item.Supplier.id);
  const history = async (id: string) => (await t.http.get(withToken(`suppliers/${id}/history`)).expect(200)).body.data as Rec[];

  it("creates, reads and updates a supplier with its body's rules and its decider's", async () => {
    const created = await createSupplier({ name: 'Caspian Leaf', email: 'Sales@Caspian.example', city: 'Rasht' });
    expect(created).toEqual({ id: expect.any(String), name: 'Caspian Leaf', email: 'Sales@Caspian.example', city: 'Rasht', created: expect.any(Number) });

    const read = await t.http.get(withToken(`suppliers/${created.id}`)).expect(200);
    expect(read.headers.etag).toBe('"0"');
    expect(read.body.data).toEqual([{ Supplier: created }]);
    const updated = await t.http
      .put(withToken(`suppliers/${created.id}`))
      .send({ city: 'Lahijan' })
      .expect(200);
    expect(updated.body).toEqual({ data: { Supplier: { ...created, city: 'Lahijan' } }, success: true, status: 201 });

    // The decider's rule, and the body's: a name is required, an unknown field is refused.
    const nameless = await t.http.post(withToken('suppliers')).send({ city: 'Rasht' }).expect(400);
    expect(nameless.body.error.details).toEqual([{ field: 'name', message: 'name must be filled in' }]);
    const unknown = await t.http.post(withToken('suppliers')).send({ name: 'X', mobile: '09121234567' }).expect(400);
    expect(unknown.body.error.details.map((d: Rec) => d.field)).toEqual(['mobile']);
    // Another account's supplier does not exist for you.
    await t.http.get(withToken(`suppliers/${created.id}`, TOKENS.b)).expect(404);
  });

  it('creates a supplier once for a repeated Idempotency-Key, in its own collection', async () => {
    const key = uid('supplier-key');
    const send = () => t.http.post(withToken('suppliers')).set('Idempotency-Key', key).send({ name: 'Once Only' });
    const first = await send().expect(201);
    const again = await send().expect(201);
    expect(again.body).toEqual(first.body);
    expect(await list({ email: '' })).toContain(first.body.data.Supplier.id);
    // The key belongs to its create in /v1/suppliers: a create elsewhere with it is refused.
    const elsewhere = await t.http.post(withToken('customers')).set('Idempotency-Key', key).send({ email: 'once@only.example' }).expect(409);
    expect(elsewhere.body.error.message).toBe('This Idempotency-Key was used to create in /v1/suppliers; use a new key for a new request.');
  });

  it("lists the account's suppliers by its read model's filters: email as a whole, city by any part", async () => {
    const city = uid('Bandar');
    const first = await createSupplier({ name: 'First', email: `${uid('a')}@one.example`, city: `${city} Anzali` });
    const second = await createSupplier({ name: 'Second', email: `${uid('b')}@two.example`, city: `Port of ${city}` });
    await createSupplier({ name: 'Elsewhere', city: `${city} Abbas` }, TOKENS.b);

    expect(await list({ city: city.toLowerCase() })).toEqual([second.id, first.id]);
    expect(await list({ email: String(first.email).toUpperCase() })).toEqual([first.id]);
    expect(await list({ city: 'anzali', email: String(second.email) })).toEqual([]);
  });

  it("keeps a supplier's history, and after its erasure none of its values in it", async () => {
    const name = uid('Gilan Growers');
    const supplier = await createSupplier({ name, city: uid('Fuman') });
    await t.http
      .put(withToken(`suppliers/${supplier.id}`))
      .send({ email: `${uid('g')}@gilan.example` })
      .expect(200);
    await t.http.delete(withToken(`suppliers/${supplier.id}`)).expect(200);
    expect((await history(supplier.id)).map((entry) => [entry.event, entry.revision, Object.keys(entry.changes as Rec)])).toEqual([
      ['SupplierCreated', 0, ['name', 'city']],
      ['SupplierUpdated', 1, ['email']],
      ['SupplierDeleted', 2, []],
    ]);
    expect((await history(supplier.id))[0].changes).toEqual({ name: { from: '', to: name }, city: { from: '', to: supplier.city } });

    const erased = await t.http.post(withToken(`suppliers/${supplier.id}/erase`)).expect(200);
    expect(erased.body).toEqual({ data: { Supplier: { id: supplier.id } }, success: true, status: 200, message: 'Supplier erased.' });

    await t.http.get(withToken(`suppliers/${supplier.id}`)).expect(404);
    expect((await history(supplier.id)).map((entry) => [entry.event, entry.changes])).toEqual([
      ['SupplierCreated', { name: null, city: null }],
      ['SupplierUpdated', { email: null }],
      ['SupplierDeleted', {}],
      ['SupplierErased', {}],
    ]);
  });

  it("tells a supplier's changes in the change feed, as /v1/suppliers entries, blanked once it is erased", async () => {
    const { cursor: start } = await readFeed(t.baseUrl, TOKENS.a);
    const supplier = await createSupplier({ name: 'Feed Leaf', city: 'Astara' });
    await t.http
      .put(withToken(`suppliers/${supplier.id}`))
      .send({ city: 'Talesh' })
      .expect(200);
    const told = (entries: FeedEntry[]) => entries.map((e) => [e.type, e.source, e.subject, e.data.revision, e.data.changes]);

    expect(told((await readFeed(t.baseUrl, TOKENS.a, start)).entries)).toEqual([
      ['supplier.created', '/v1/suppliers', supplier.id, 0, { name: { from: '', to: 'Feed Leaf' }, city: { from: '', to: 'Astara' } }],
      ['supplier.updated', '/v1/suppliers', supplier.id, 1, { city: { from: 'Astara', to: 'Talesh' } }],
    ]);
    await t.http.post(withToken(`suppliers/${supplier.id}/erase`)).expect(200);
    expect(told((await readFeed(t.baseUrl, TOKENS.a, start)).entries)).toEqual([
      ['supplier.created', '/v1/suppliers', supplier.id, 0, { name: null, city: null }],
      ['supplier.updated', '/v1/suppliers', supplier.id, 1, { city: null }],
      ['supplier.erased', '/v1/suppliers', supplier.id, 2, {}],
    ]);
    // Another account's feed tells none of it.
    expect((await readFeed(t.baseUrl, TOKENS.b)).entries.filter((e) => e.subject === supplier.id)).toEqual([]);
  });

  it('documents /v1/suppliers, its tag and its feed entries in the OpenAPI document, beside the registered kinds', async () => {
    const doc = (await t.http.get('/docs-json').expect(200)).body;
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/v1/suppliers'))).toEqual([
      '/v1/suppliers',
      '/v1/suppliers/{id}',
      '/v1/suppliers/{id}/history',
      '/v1/suppliers/{id}/erase',
    ]);
    expect(doc.tags.map((tag: Rec) => tag.name)).toEqual(['profiles', 'customers', 'suppliers', 'events', 'operations']);
    const filters = doc.paths['/v1/suppliers'].get.parameters.filter((p: Rec) => String(p.description).startsWith('filter:'));
    expect(filters.map((p: Rec) => [p.name, p.description])).toEqual([
      ['email', 'filter: matches the whole value, ignoring case; empty is ignored; filters combine with AND'],
      ['city', 'filter: matches any record whose value contains it, ignoring case; empty is ignored; filters combine with AND'],
    ]);
    expect(doc.components.schemas.Supplier.required).toEqual(['id', 'name', 'email', 'city', 'created']);
    expect(doc.components.schemas.FeedEntry.properties.source.enum).toEqual(['/v1/profiles', '/v1/customers', '/v1/suppliers']);
    expect(doc.paths['/v1/events'].get.description).toMatch(/^Every change to the account's profiles, customers and suppliers, oldest first/);
  });

  it('reports the suppliers read model in /health/ready with the others', async () => {
    const ready = await t.http.get('/health/ready').expect(200);
    expect(ready.body.projections.map((p: Rec) => p.name)).toEqual(['profiles', 'customers', 'suppliers', 'feed']);
  });

  describeOnSqlite('on the embedded store', () => {
    it("keeps a supplier's values in plain only in its read model, and nowhere once erased", async () => {
      const values = [uid('Sealed Supplier Name'), uid('Sealed City')];
      const supplier = await createSupplier({ name: values[0], city: values[1] });
      // The read model holds them in plain while the supplier is there; the events are sealed.
      expect(filesContaining(t.dataDir, values)).not.toEqual([]);
      await t.http.post(withToken(`suppliers/${supplier.id}/erase`)).expect(200);
      expect(filesContaining(t.dataDir, values)).toEqual([]);
    });
  });
});

describeUnlessWorkers('rebuilding the read models of a kind given to the app', 'the kind is defined in the tests, so it needs the app in-process', () => {
  it("replays the kind's events into a new generation of its read model, as the CLI's rebuild does for the registered kinds", async () => {
    const kinds = [...REGISTERED_KINDS, SUPPLIERS];
    const first = await startTestApp({ extraKinds: [SUPPLIERS] });
    const supplier = (await first.http.post(withToken('suppliers')).send({ name: 'Rebuilt Leaf', city: 'Ramsar' }).expect(201)).body.data.Supplier;
    await first.close({ keepData: true });

    const { eventStore, readStore } = await openStores(
      loadConfig({ DATA_DIR: first.dataDir, ...liveStoreEnv() }),
      kinds.map((k) => k.kind),
    );
    try {
      const suppliersModel = readModelsOf(kinds).filter((p) => p.name === 'suppliers');
      const results = await rebuildProjections(suppliersModel, eventStore, readStore, { signal: new AbortController().signal, graceMs: 0 });
      expect(results.map((r) => [r.projection, r.generation > 1])).toEqual([['suppliers', true]]);
    } finally {
      await eventStore.close();
      await readStore.close();
    }

    const again = await startTestApp({ dataDir: first.dataDir, extraKinds: [SUPPLIERS] });
    try {
      const listed = await again.http.get(withToken(withQuery('suppliers', { city: 'ramsar' }))).expect(200);
      expect(listed.body.data).toEqual([{ Supplier: supplier }]);
    } finally {
      await again.close();
    }
  });
});
