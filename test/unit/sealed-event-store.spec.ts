import { randomUUID } from 'node:crypto';
import * as dataKeys from '../../src/sealing/data-keys';
import { DataKeys, open, seal } from '../../src/sealing/data-keys';
import { MISSING_KEY_GRACE_MS, MissingKeysError, SealedEventStore } from '../../src/sealing/sealed-event-store';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { NewEvent, START, StoredEvent, WrongExpectedRevisionError } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { RECORD_KINDS } from '../../src/read-models';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { openTempSqlite } from '../support/temp-sqlite';

const metadata = { accountId: 'acc-1', correlationId: 'r', causationId: 'c', schemaVersion: 2 };
const event = (type: string, data: Record<string, unknown>): NewEvent => ({ id: randomUUID(), type, data, metadata });

describe('seal and open', () => {
  const key = Buffer.alloc(32, 7);

  it('opens what it sealed, and nothing sealed under another key, for another event, or altered', () => {
    const sealed = seal(key, '["Ada"]', 'event-1');
    expect(open(key, sealed, 'event-1')).toBe('["Ada"]');
    expect(() => open(Buffer.alloc(32, 8), sealed, 'event-1')).toThrow();
    expect(() => open(key, sealed, 'event-2')).toThrow();
    const bytes = Buffer.from(sealed, 'base64');
    bytes[14] ^= 1;
    expect(() => open(key, bytes.toString('base64'), 'event-1')).toThrow();
  });

  it('seals the same value differently each time (a fresh IV)', () => {
    expect(seal(key, 'x', 'e')).not.toBe(seal(key, 'x', 'e'));
  });
});

describe('SealedEventStore', () => {
  let events: ReturnType<typeof openTempSqlite>;
  let keysDb: ReturnType<typeof openTempSqlite>;
  let inner: SqliteEventStore;
  let keyStore: SqliteKeyStore;
  let store: SealedEventStore;
  beforeEach(() => {
    events = openTempSqlite();
    keysDb = openTempSqlite();
    inner = new SqliteEventStore(events.db);
    keyStore = new SqliteKeyStore(keysDb.db);
    store = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
  });
  afterEach(async () => {
    await store.close();
    events.dispose();
    keysDb.dispose();
  });

  it('keeps record values sealed in the store, names and metadata plain, and opens them on every read', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada', email: 'ada@x.io' })], 'no_stream');
    const [raw] = await inner.readStream(stream);
    expect(raw.data).toEqual({ fields: ['name', 'email'], sealed: expect.any(String) });
    // Random base64 may hold "Ada" by chance: look for the JSON-encoded values in the decoded bytes.
    const sealed = Buffer.from((raw.data as { sealed: string }).sealed, 'base64');
    for (const value of ['"Ada"', '"ada@x.io"']) expect(sealed.includes(value)).toBe(false);
    expect(raw.metadata).toEqual(metadata);
    expect((await store.readStream(stream))[0].data).toEqual({ name: 'Ada', email: 'ada@x.io' });
    const [batch] = await first(store.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
    expect(batch.events[0].data).toEqual({ name: 'Ada', email: 'ada@x.io' });
  });

  it('leaves the values sealed for a subscriber that reads none (values: false), and takes no key for them', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    const reads = jest.spyOn(keyStore, 'getMany');
    const [batch] = await first(store.subscribeToAll(START, { signal: AbortSignal.timeout(5000), values: false }));
    expect(batch.events[0].data).toEqual({ fields: ['name'], sealed: expect.any(String) });
    expect(reads).not.toHaveBeenCalled();
    // The values this process appended are still there for a subscriber that opens them.
    const [opened] = await first(store.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
    expect(opened.events[0].data).toEqual({ name: 'Ada' });
  });

  it('leaves other streams and events without data as they are', async () => {
    await store.appendToStream('profile_slug-shop', [event('SlugReserved', { slug: 'shop', profileId: 'p' })], 'no_stream');
    expect((await inner.readStream('profile_slug-shop'))[0].data).toEqual({ slug: 'shop', profileId: 'p' });
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { email: 'a@x.io' }), event('CustomerDeleted', {})], 'no_stream');
    expect((await inner.readStream(stream))[1].data).toEqual({});
  });

  it('opens the events of a record whose key is destroyed with every value "", names kept, and refuses new ones', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada', email: 'ada@x.io' })], 'no_stream');
    await store.readStream(stream); // the key is cached now
    await store.keys.destroy(stream, 'acc-1');
    expect((await store.readStream(stream))[0].data).toEqual({ name: '', email: '' });
    await expect(store.appendToStream(stream, [event('CustomerUpdated', { name: 'Eve' })], 0)).rejects.toThrow(`${stream} has been erased`);
  });

  it('reads events kept in plain from before sealing (as EventStoreDB keeps them) with every value "" once their record is erased', async () => {
    const stream = `customer-${randomUUID()}`;
    const old = { ...metadata, schemaVersion: 1 };
    await inner.appendToStream(stream, [{ ...event('CustomerCreated', { name: 'Ada', email: 'ada@x.io' }), metadata: old }], 'no_stream');
    expect((await store.readStream(stream))[0].data).toEqual({ name: 'Ada', email: 'ada@x.io' });
    await keyStore.destroy(stream, 'acc-1'); // the erasure of a record that never had a key
    expect((await store.readStream(stream))[0].data).toEqual({ name: '', email: '' });
    // A rebuild's subscription too: before, it folded the plain values into the read models again.
    const [batch] = await first(store.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
    expect(batch.events.find((e) => e.streamId === stream)?.data).toEqual({ name: '', email: '' });
  });

  it('reads a sealed event whose key the key store does not show yet as unavailable, not as erased, and opens it once the key shows', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    // Another process reads, its key store lagging (a secondary, a deposed primary): no key, no tombstone.
    const elsewhere = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
    jest.spyOn(keyStore, 'getMany').mockResolvedValueOnce(new Map()).mockResolvedValueOnce(new Map());
    await expect(elsewhere.readStream(stream)).rejects.toThrow(StoreUnavailableError);
    // The projector's subscription fails as unavailable too, and is retried rather than folding blanks.
    await expect(first(elsewhere.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }))).rejects.toThrow(StoreUnavailableError);
    expect((await elsewhere.readStream(stream))[0].data).toEqual({ name: 'Ada' });
  });

  it('hands a subscription the events whose key stays missing past the grace as unreadable, opening the rest of the batch', async () => {
    const lost = `customer-${randomUUID()}`;
    const kept = `customer-${randomUUID()}`;
    await store.appendToStream(lost, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    await store.appendToStream(kept, [event('CustomerCreated', { name: 'Bea' })], 'no_stream');
    // Its key lost, tombstone and all (a key store restored from a backup older than the events): nothing says it was erased.
    keysDb.db.prepare('DELETE FROM data_keys WHERE key_id = ?').run(lost);
    const patient = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
    await expect(first(patient.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }))).rejects.toThrow(MissingKeysError);
    const graceless = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS, { missingKeyGraceMs: 0 });
    const [batch] = await first(graceless.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
    expect(batch.events.map((e) => [e.streamId, e.data, e.unreadable])).toEqual([
      [lost, {}, expect.stringMatching(new RegExp(`^its record's data key ${lost} is missing from the key store`))],
      [kept, { name: 'Bea' }, undefined],
    ]);
    // A read of the stream still says unavailable: only a subscription hands it over as unreadable.
    await expect(graceless.readStream(lost)).rejects.toThrow(MissingKeysError);

    // Past the grace, once found lost, the key stays lost for every later batch: none waits the grace again.
    const later = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + MISSING_KEY_GRACE_MS);
    try {
      for (let pass = 0; pass < 2; pass++) {
        const [again] = await first(patient.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
        expect(again.events.map((e) => e.unreadable === undefined)).toEqual([false, true]);
      }
    } finally {
      later.mockRestore();
    }
  });

  it('opens blank an erased record whose key left no tombstone (a key store restored from before the erasure): its erasure event says so', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    await store.keys.destroy(stream, 'acc-1');
    await store.appendToStream(stream, [event('CustomerErased', {})], 0);
    keysDb.db.prepare('DELETE FROM data_keys WHERE key_id = ?').run(stream);
    expect((await store.readStream(stream)).map((e) => e.data)).toEqual([{ name: '' }, {}]);
    const [batch] = await first(store.subscribeToAll(START, { signal: AbortSignal.timeout(5000) }));
    expect(batch.events[0].data).toEqual({ name: '' });
  });

  it('forgets a cached key when it reads the record’s erasure event (another process destroyed it)', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    await store.readStream(stream);
    await keyStore.destroy(stream, 'acc-1'); // past this process's cache, as another instance would
    expect((await store.readStream(stream))[0].data).toEqual({ name: 'Ada' }); // still cached here
    await store.appendToStream(stream, [event('CustomerErased', {})], 0);
    expect((await store.readStream(stream))[0].data).toEqual({ name: '' });
  });

  it('fetches the keys of a batch in one read of the key store', async () => {
    const streams = Array.from({ length: 30 }, () => `profile-${randomUUID()}`);
    for (const s of streams) await store.appendToStream(s, [event('ProfileCreated', { name: s })], 'no_stream');
    const fresh = new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS);
    const getMany = jest.spyOn(keyStore, 'getMany');
    const [batch] = await first(fresh.subscribeToAll(START, { signal: AbortSignal.timeout(5000), maxBatchSize: 100 }));
    expect(batch.events.map((e) => e.data.name)).toEqual(streams);
    expect(getMany).toHaveBeenCalledTimes(1);
  });

  it('hands a subscription of this process the values appended here, without opening them again', async () => {
    const before = `customer-${randomUUID()}`;
    await store.appendToStream(before, [event('CustomerCreated', { name: 'Before' })], 'no_stream');
    const stop = new AbortController();
    const batches = store.subscribeToAll(START, { signal: stop.signal })[Symbol.asyncIterator]();
    const opened = jest.spyOn(dataKeys, 'openOrNull');
    try {
      const seen: StoredEvent[] = [];
      const read = async (count: number) => {
        while (seen.length < count) seen.push(...((await batches.next()).value as { events: StoredEvent[] }).events);
      };
      await read(1);
      expect(opened).toHaveBeenCalledTimes(1); // appended before the subscription began: opened

      const stream = `customer-${randomUUID()}`;
      await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' }), event('CustomerUpdated', { name: 'Eve' })], 'no_stream');
      await expect(store.appendToStream(stream, [event('CustomerUpdated', { name: 'Lost' })], 0)).rejects.toThrow(WrongExpectedRevisionError);
      // Another process's append (a store of its own on the same files): opened.
      await new SealedEventStore(inner, new DataKeys(keyStore), RECORD_KINDS).appendToStream(stream, [event('CustomerUpdated', { name: 'Bob' })], 1);
      await read(4);
      // Nothing kept while the subscription still runs: what it took is gone, and so are the
      // values of the refused append.
      expect((store as unknown as { appendedHere: Map<string, string> }).appendedHere.size).toBe(0);
      stop.abort();
      await batches.return?.(undefined);
      expect(seen.map((e) => e.data)).toEqual([{ name: 'Before' }, { name: 'Ada' }, { name: 'Eve' }, { name: 'Bob' }]);
      expect(opened).toHaveBeenCalledTimes(2);
    } finally {
      opened.mockRestore();
    }
  });

  it('hands out every batch in order, reading ahead, and none once its caller’s signal aborts', async () => {
    const streams = Array.from({ length: 10 }, () => `customer-${randomUUID()}`);
    for (const s of streams) await store.appendToStream(s, [event('CustomerCreated', { name: s })], 'no_stream');
    const stop = new AbortController();
    const seen: string[] = [];
    for await (const batch of store.subscribeToAll(START, { signal: stop.signal, maxBatchSize: 2 })) {
      seen.push(...batch.events.map((e) => e.data.name as string));
      // Three batches read: two more are read ahead by now, and must not be handed out.
      if (seen.length === 6) stop.abort();
    }
    expect(seen).toEqual(streams.slice(0, 6));
  });

  it('ends its inner subscription when the caller stops, even one waiting for events', async () => {
    const stream = `customer-${randomUUID()}`;
    await store.appendToStream(stream, [event('CustomerCreated', { name: 'Ada' })], 'no_stream');
    let innerEnded = false;
    const subscribe = inner.subscribeToAll.bind(inner);
    jest.spyOn(inner, 'subscribeToAll').mockImplementation(async function* (from, options) {
      try {
        yield* subscribe(from, options);
      } finally {
        innerEnded = true;
      }
    });
    // The caller never aborts its signal: it just stops after the first batch.
    expect(await first(store.subscribeToAll(START, { signal: new AbortController().signal }))).toHaveLength(1);
    // Once the inner's poll comes round (however late a loaded machine runs it).
    for (let i = 0; i < 100 && !innerEnded; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(innerEnded).toBe(true);
  });
});

async function first<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  for await (const item of iterable) return [item];
  return [];
}
