import { createHash, randomUUID } from 'node:crypto';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { DataKeys } from '../../src/sealing/data-keys';
import { SealedEventStore } from '../../src/sealing/sealed-event-store';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { Refusal } from '../../src/errors';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { IdempotentCreates } from '../../src/idempotency/idempotent-creates';
import { RECORD_KINDS } from '../../src/read-models';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { openTempSqlite } from '../support/temp-sqlite';

/**
 * An Idempotency-Key claimed before schema 2: its claim and answer are in plain, as EventStoreDB
 * keeps them (it cannot rewrite events; the embedded store seals them at its first start).
 */
describe('IdempotentCreates: a claim kept in plain from before encryption', () => {
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const account = 'acc';
  const key = 'order-1';
  const fields = { name: 'Hafez', email: 'hafez@example.com' };
  const context = { accountId: account, requestId: 'r2' };
  const metadata = { accountId: account, correlationId: 'r1', causationId: 'r1', schemaVersion: 1 };
  let events: ReturnType<typeof openTempSqlite>;
  let keys: ReturnType<typeof openTempSqlite>;
  let store: SqliteEventStore;
  let keyStore: SqliteKeyStore;
  let creates: IdempotentCreates;
  let id: string;
  const body = () => ({ data: { Customer: { id, ...fields } }, success: true, status: 201 });

  beforeEach(async () => {
    events = openTempSqlite();
    keys = openTempSqlite();
    store = new SqliteEventStore(events.db);
    keyStore = new SqliteKeyStore(keys.db);
    creates = new IdempotentCreates(store, new DataKeys(keyStore));
    id = randomUUID();
    const stream = `idempotency-${sha256(`${account}\n${key}`)}`;
    const fingerprint = sha256(JSON.stringify(['customers', Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1))]));
    await store.appendToStream(stream, [{ id: randomUUID(), type: 'IdempotencyKeyClaimed', data: { fingerprint, recordId: id }, metadata }], 'no_stream');
    await store.appendToStream(`customer-${id}`, [{ id: randomUUID(), type: CUSTOMER.events.created, data: fields, metadata }], 'no_stream');
    await store.appendToStream(stream, [{ id: randomUUID(), type: 'IdempotencyKeyAnswered', data: { body: body(), revision: 0 }, metadata }], 0);
  });
  afterEach(async () => {
    await store.close();
    await keyStore.close();
    events.dispose();
    keys.dispose();
  });

  const retry = () =>
    creates.run(context, key, { kind: CUSTOMER, fields }, () => {
      throw new Error('a replay creates nothing');
    });

  it('replays its answer while the record lives', async () => {
    await expect(retry()).resolves.toEqual({ body: body(), revision: 0 });
  });

  it("answers 409, not the erased record's data, once the record is erased", async () => {
    await store.appendToStream(`customer-${id}`, [{ id: randomUUID(), type: CUSTOMER.events.erased, data: {}, metadata }], 0);
    const refused = await retry().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Refusal);
    expect(refused).toMatchObject({
      reason: 'gone',
      message: 'The customer this Idempotency-Key created has been erased; use a new key to create a new one.',
    });
  });
});

describe('IdempotentCreates: a sealed claim whose record key the key store does not show', () => {
  const context = { accountId: 'acc', requestId: 'r' };
  const fields = { name: 'Hafez' };
  let events: ReturnType<typeof openTempSqlite>;
  let keys: ReturnType<typeof openTempSqlite>;
  let store: SealedEventStore;
  let keyStore: SqliteKeyStore;

  beforeEach(() => {
    events = openTempSqlite();
    keys = openTempSqlite();
    keyStore = new SqliteKeyStore(keys.db);
    store = new SealedEventStore(new SqliteEventStore(events.db), new DataKeys(keyStore), RECORD_KINDS);
  });
  afterEach(async () => {
    await store.close();
    events.dispose();
    keys.dispose();
  });

  /** A create under the key on one instance, then its retry on another instance (keys of its own, none cached). */
  async function createThenRetry() {
    const create = (recordId: string) =>
      store
        .appendToStream(
          `customer-${recordId}`,
          [
            {
              id: randomUUID(),
              type: CUSTOMER.events.created,
              data: fields,
              metadata: { accountId: 'acc', correlationId: 'r', causationId: 'c', schemaVersion: 2 },
            },
          ],
          'no_stream',
        )
        .then(() => ({ body: { id: recordId }, revision: 0 }));
    const first = await new IdempotentCreates(store, store.keys).run(context, 'order-1', { kind: CUSTOMER, fields }, create);
    const retry = () => new IdempotentCreates(store, new DataKeys(keyStore)).run(context, 'order-1', { kind: CUSTOMER, fields }, create);
    return { first, retry };
  }

  it('answers unavailable (503, to retry), not "erased" (409), while the key is not there as this read sees it', async () => {
    const { first, retry } = await createThenRetry();
    jest.spyOn(keyStore, 'getMany').mockResolvedValueOnce(new Map());
    await expect(retry()).rejects.toThrow(StoreUnavailableError);
    await expect(retry()).resolves.toEqual(first);
  });

  it("answers 409 once the record is erased, its key's tombstone there or lost", async () => {
    const { first, retry } = await createThenRetry();
    const streamId = `customer-${(first.body as { id: string }).id}`;
    await store.keys.destroy(streamId, 'acc');
    await store.appendToStream(
      streamId,
      [{ id: randomUUID(), type: CUSTOMER.events.erased, data: {}, metadata: { accountId: 'acc', correlationId: 'r', causationId: 'c', schemaVersion: 2 } }],
      0,
    );
    await expect(retry()).rejects.toMatchObject({ reason: 'gone' });
    keys.db.prepare('DELETE FROM data_keys WHERE key_id = ?').run(streamId);
    await expect(retry()).rejects.toMatchObject({ reason: 'gone' });
  });
});
