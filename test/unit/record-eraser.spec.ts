import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { CUSTOMER, decideCreateCustomer, decideUpdateCustomer } from '../../src/customers/customer.decider';
import { customerProjection } from '../../src/customers/customer.projection';
import { DataKeys } from '../../src/sealing/data-keys';
import { RecordEraser } from '../../src/records/record-eraser';
import { SealedEventStore } from '../../src/sealing/sealed-event-store';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { contended } from '../../src/errors';
import { ReadModelsBehindError } from '../../src/projections/read-models-behind.error';
import { EventBatch, Position, START } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { foldBatch } from '../../src/projections/fold-batch';
import { Projector } from '../../src/projections/projector';
import type { ProjectionsService } from '../../src/projections/projections.service';
import { RECORD_KINDS } from '../../src/read-models';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { RecordWriter } from '../../src/records/record-writer';
import { openTempSqlite } from '../support/temp-sqlite';
import { filesContaining } from '../support/test-app';

const context = { accountId: 'acc', requestId: 'req' };

describe('RecordEraser', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  let keysDb: ReturnType<typeof openTempSqlite>;
  let keyStore: SqliteKeyStore;
  let inner: SqliteEventStore;
  let events: SealedEventStore;
  let reads: SqliteReadStore;
  let projector: Projector;
  /** While true, the read models do not show a write in time: waitFor answers 503, as the real one does on its timeout. */
  let lagging = false;

  beforeEach(async () => {
    sqlite = openTempSqlite();
    keysDb = openTempSqlite();
    keyStore = new SqliteKeyStore(keysDb.db);
    inner = new SqliteEventStore(sqlite.db);
    events = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
    reads = new SqliteReadStore(sqlite.db);
    projector = new Projector(customerProjection, events, reads, { holder: 'unit', ttlMs: 60_000 });
    await projector.start();
    lagging = false;
  });
  afterEach(async () => {
    await projector.stop();
    await events.close();
    sqlite.dispose();
    keysDb.dispose();
  });

  const readModels = {
    waitFor: async (_streamId: string, position: Position) => {
      if (lagging) throw new ReadModelsBehindError('The change is saved, but the read models do not show it yet; try reading it again shortly.', 1);
      await projector.waitFor(position, 5000);
    },
  } as unknown as ProjectionsService;

  it("answers 404 to an update decided on values that read '' while another worker erases the record", async () => {
    const id = randomUUID();
    const here = new RecordWriter(CUSTOMER, events, readModels, events.keys);
    await here.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada', email: 'ada@example.com' }), { isNew: true });
    // Another worker's erasure has destroyed the key, and not appended its event yet.
    await new DataKeys(keyStore).destroy(`customer-${id}`, 'acc');

    // A worker that never held the key reads the record with no email left: not a 400 for a missing email.
    const elsewhere = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
    const writer = new RecordWriter(CUSTOMER, elsewhere, readModels, elsewhere.keys);
    await expect(writer.write(id, context, randomUUID(), (state) => decideUpdateCustomer(state, 'acc', { name: 'Grace' }))).rejects.toMatchObject({
      reason: 'not_found',
    });
  });

  it('scrubs at once an erasure the read models are slow to show, answers 503, and finishes it once they show it', async () => {
    const { writer, id } = await adaCreated();
    expect((await reads.get('customers', 'acc', id))?.fields).toMatchObject({ name: 'Ada Lovelace' });

    await projector.stop(); // the read models fall behind
    lagging = true;
    const freeing = jest.fn(async () => undefined);
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads);
    await expect(eraser.erase(id, context, randomUUID(), freeing)).rejects.toBeInstanceOf(ReadModelsBehindError);

    // Scrubbed at once, and what the erased record held freed:
    expect(await reads.get('customers', 'acc', id)).toBeNull();
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
    expect(freeing).toHaveBeenCalledWith(expect.objectContaining({ fields: expect.objectContaining({ name: 'Ada Lovelace' }) }));
    // Pending until the read models show the erasure: a batch opened before the key went may still be written.
    expect(await keyStore.pendingErasures('customer-')).toEqual([expect.objectContaining({ keyId: `customer-${id}` })]);

    lagging = false;
    projector = new Projector(customerProjection, events, reads, { holder: 'unit', ttlMs: 60_000 });
    await projector.start(); // the read models catch up
    await finished();
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  it('finishes in the background an erasure whose event could not be written after its key was destroyed', async () => {
    const { writer, id } = await adaCreated();
    const append = jest.spyOn(events, 'appendToStream').mockRejectedValueOnce(new StoreUnavailableError('SQLite', 'the disk is gone for a moment'));
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads);
    await expect(eraser.erase(id, context, randomUUID())).rejects.toThrow(StoreUnavailableError);
    // The key is gone, the erasure event not written: the eraser finishes it without a retry or a restart.
    await finished();
    append.mockRestore();
    expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
    expect(await reads.get('customers', 'acc', id)).toBeNull();
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  it('finishes in the background an erasure whose key the store may not have destroyed (a store down, a write concern not met in time)', async () => {
    const { writer, id } = await adaCreated();
    // Refused before reaching the store: the key is still there when the request answers 503.
    const destroy = jest.spyOn(keyStore, 'destroy').mockRejectedValueOnce(new StoreUnavailableError('MongoDB', 'waiting for replication timed out'));
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads);
    await expect(eraser.erase(id, context, randomUUID())).rejects.toThrow(StoreUnavailableError);
    expect((await keyStore.getMany([`customer-${id}`])).get(`customer-${id}`)).toBeInstanceOf(Buffer);
    for (const started = Date.now(); (await events.readStream(`customer-${id}`)).length < 2 || (await keyStore.pendingErasures('customer-')).length > 0;) {
      if (Date.now() - started > 10_000) throw new Error('the erasure was never finished');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    destroy.mockRestore();
    expect((await keyStore.getMany([`customer-${id}`])).get(`customer-${id}`)).toBeNull();
    expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  /** A writer on the suite's stores, and a customer it created. */
  async function adaCreated(): Promise<{ writer: RecordWriter; id: string }> {
    const writer = new RecordWriter(CUSTOMER, events, readModels, events.keys);
    const id = randomUUID();
    await writer.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada Lovelace', email: 'ada@example.com' }), { isNew: true });
    return { writer, id };
  }

  /** Until no erasure is pending, within 10 s. */
  async function finished(): Promise<void> {
    for (const started = Date.now(); (await keyStore.pendingErasures('customer-')).length > 0;) {
      if (Date.now() - started > 10_000) throw new Error('the erasure was never finished');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it("finishes in the background an erasure whose scrub failed (a store down: MongoDB's updateMany is not retried by its driver)", async () => {
    const { writer, id } = await adaCreated();
    // The eraser's read store (the projector folds on its own): its first scrub fails.
    const scrub = jest.fn(reads.erase.bind(reads)).mockRejectedValueOnce(new StoreUnavailableError('MongoDB', 'connection reset'));
    const freeing = jest.fn(async () => undefined);
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), Object.assign(Object.create(reads), { erase: scrub }));
    await expect(eraser.erase(id, context, randomUUID(), freeing)).rejects.toThrow(StoreUnavailableError);
    expect(freeing).toHaveBeenCalled(); // the erasure is written: what the record held is freed all the same
    await finished();
    expect(scrub).toHaveBeenCalledTimes(2);
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  it('finishes in the background, not at the next start, an interrupted erasure whose scrub fails at start', async () => {
    const { writer, id } = await adaCreated();
    await keyStore.destroy(`customer-${id}`, 'acc'); // a stop came right after the key went
    const scrub = jest.fn(reads.erase.bind(reads)).mockRejectedValueOnce(new StoreUnavailableError('MongoDB', 'connection reset'));
    await new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), Object.assign(Object.create(reads), { erase: scrub })).finishPending();
    await finished();
    expect(scrub).toHaveBeenCalledTimes(2);
    expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  it('erasing an erased record again destroys its key once more: one a key store restored from an older backup has again', async () => {
    const writer = new RecordWriter(CUSTOMER, events, readModels, events.keys);
    const id = randomUUID();
    const keyId = `customer-${id}`;
    await writer.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada Lovelace', email: 'ada@example.com' }), { isNew: true });
    const key = (await keyStore.getMany([keyId])).get(keyId)!;
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads);
    await eraser.erase(id, context, randomUUID());
    // The restore: the key as it was before the erasure.
    keysDb.db.prepare('UPDATE data_keys SET key = ?, erased_by = NULL, erased_at = NULL, pending = 0 WHERE key_id = ?').run(key, keyId);
    expect((await keyStore.getMany([keyId])).get(keyId)).toEqual(key);

    await eraser.erase(id, context, randomUUID());
    expect((await keyStore.getMany([keyId])).get(keyId)).toBeNull();
    expect(await keyStore.pendingErasures('customer-')).toEqual([]);
    expect((await events.readStream(keyId)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);

    // Erased, its key gone: another erase writes nothing to the key store.
    const destroy = jest.spyOn(keyStore, 'destroy');
    await eraser.erase(id, context, randomUUID());
    expect(destroy).not.toHaveBeenCalled();
  });

  it('finishes in the background an erasure whose key went but whose destruction failed after (its sync, its log’s truncation)', async () => {
    const { writer, id } = await adaCreated();
    const keys = new DataKeys(keyStore);
    const destroy = keys.destroy.bind(keys);
    jest.spyOn(keys, 'destroy').mockImplementationOnce(async (keyId, erasedBy) => {
      await destroy(keyId, erasedBy);
      throw new StoreUnavailableError('SQLite', 'the write-ahead log could not be checkpointed: other connections kept reading');
    });
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, keys, reads);
    await expect(eraser.erase(id, context, randomUUID())).rejects.toThrow(StoreUnavailableError);
    await finished();
    expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
    expect((await reads.getMany('customers', [id])).get(id)).toMatchObject({ deleted: true, fields: {} });
  });

  it('at start, finishes each interrupted erasure apart: one that fails otherwise than for a store down leaves the others to finish', async () => {
    const writer = new RecordWriter(CUSTOMER, events, readModels, events.keys);
    const ids = [randomUUID(), randomUUID()];
    for (const id of ids) {
      await writer.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada Lovelace', email: 'ada@example.com' }), {
        isNew: true,
      });
      await keyStore.destroy(`customer-${id}`, 'acc'); // a stop came right after the key went
    }
    // The first erasure's write meets too many writers once.
    jest.spyOn(writer, 'write').mockRejectedValueOnce(contended('Customer'));
    await new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads).finishPending();
    await finished();
    for (const id of ids) expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
  });

  it('at start, lists the interrupted erasures again in the background when the key store cannot answer at first', async () => {
    const { writer, id } = await adaCreated();
    await keyStore.destroy(`customer-${id}`, 'acc'); // a stop came right after the key went
    const listing = jest.spyOn(keyStore, 'pendingErasures').mockRejectedValueOnce(new StoreUnavailableError('MongoDB', 'no primary'));
    await new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads).finishPending();
    await finished();
    expect(listing.mock.calls.length).toBeGreaterThanOrEqual(2);
    expect((await events.readStream(`customer-${id}`)).map((e) => e.type)).toEqual(['CustomerCreated', 'CustomerErased']);
  });

  it('stops its background retries when the app stops, leaving the erasure pending for the next start', async () => {
    const { writer, id } = await adaCreated();
    // The read store is gone for good (closed, as at a stop): every scrub fails as unavailable.
    const scrub = jest.fn(async () => {
      throw new StoreUnavailableError('MongoDB', 'Topology is closed');
    });
    const eraser = new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), Object.assign(Object.create(reads), { erase: scrub }));
    await expect(eraser.erase(id, context, randomUUID())).rejects.toThrow(StoreUnavailableError);
    // One background try (every second), however late a loaded machine runs it.
    for (let i = 0; i < 200 && scrub.mock.calls.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    eraser.onApplicationShutdown();
    const tries = scrub.mock.calls.length;
    expect(tries).toBeGreaterThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, 1300)); // past the next try's time
    expect(scrub).toHaveBeenCalledTimes(tries);
    expect(await keyStore.pendingErasures('customer-')).toEqual([expect.objectContaining({ keyId: `customer-${id}` })]);
  });

  it('leaves no copy of the values in any file when a rebuild writes a batch it opened before the key went after the erasure', async () => {
    const writer = new RecordWriter(CUSTOMER, events, readModels, events.keys);
    const id = randomUUID();
    const email = `rebuilt-${randomUUID()}@example.com`;
    await writer.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada Lovelace', email }), { isNew: true });
    // A rebuild (in another process, as the CLI's) reads and opens its first batch while the key still exists...
    const generation = await reads.startRebuild('customers');
    const began = await events.headPosition();
    const early = await firstBatchAfter(START);

    await new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads).erase(id, context, randomUUID());
    expect(filesContaining(dirname(sqlite.file), [email])).toEqual([]);

    // ...and writes it only after the erasure answered: the values are in the building generation again, and in the log.
    await foldBatch(customerProjection, reads, generation, early, began);
    expect((await reads.getMany('customers', [id], generation)).get(id)?.fields).toMatchObject({ email });
    // The rebuild folds on, and meets the erasure.
    await foldBatch(customerProjection, reads, generation, await firstBatchAfter(early.position), began);

    expect((await reads.getMany('customers', [id], generation)).get(id)).toMatchObject({ deleted: true, fields: {} });
    expect(filesContaining(dirname(sqlite.file), [email])).toEqual([]);
  });

  it('leaves a rebuild that begins after an erasure to fold it like any event, with no scrub or truncation of its own', async () => {
    const { writer, id } = await adaCreated();
    await new RecordEraser(CUSTOMER, 'customers', writer, new DataKeys(keyStore), reads).erase(id, context, randomUUID());
    await projector.stop();

    const generation = await reads.startRebuild('customers');
    const began = await events.headPosition();
    const erase = jest.spyOn(reads, 'erase');
    await foldBatch(customerProjection, reads, generation, await firstBatchAfter(START), began);

    expect((await reads.getMany('customers', [id], generation)).get(id)).toMatchObject({ deleted: true, fields: {} });
    expect(erase).not.toHaveBeenCalled();
  });

  async function firstBatchAfter(position: Position): Promise<EventBatch> {
    const stop = new AbortController();
    try {
      for await (const batch of events.subscribeToAll(position, { signal: stop.signal, streamPrefixes: ['customer-'] })) return batch;
      throw new Error('the subscription ended');
    } finally {
      stop.abort();
    }
  }
});
