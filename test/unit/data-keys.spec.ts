import type { KeyStore } from '../../src/key-store/key-store.port';
import { DataKeys, KEYS_MADE_AT_ONCE, KEYS_RETRY_FIRST_MS, SPARE_KEYS } from '../../src/sealing/data-keys';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { openTempSqlite } from '../support/temp-sqlite';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('DataKeys.newRecordId', () => {
  let keysDb: ReturnType<typeof openTempSqlite>;
  let keyStore: SqliteKeyStore;
  let keys: DataKeys;
  let obtain: jest.SpyInstance;
  /** The most key store calls under way at once. */
  let mostAtOnce: number;
  beforeEach(() => {
    keysDb = openTempSqlite();
    keyStore = new SqliteKeyStore(keysDb.db);
    keys = new DataKeys(keyStore);
    const original = keyStore.obtain.bind(keyStore);
    let underWay = 0;
    mostAtOnce = 0;
    obtain = jest.spyOn(keyStore, 'obtain').mockImplementation(async (...args) => {
      mostAtOnce = Math.max(mostAtOnce, ++underWay);
      try {
        return await original(...args);
      } finally {
        underWay--;
      }
    });
  });
  afterEach(async () => {
    obtain.mockRestore();
    // Closing DataKeys stops the retries of a group that failed, and closes the key store.
    await keys.close();
    keysDb.dispose();
  });

  /** Every key the store was asked for has been made (or failed), what waited on them has run, and nothing more was asked. */
  const settled = async () => {
    let asked;
    do {
      asked = obtain.mock.calls.length;
      await Promise.allSettled(obtain.mock.results.map((r) => r.value));
      await new Promise(setImmediate);
    } while (obtain.mock.calls.length !== asked);
  };

  it('hands out new ids whose keys are stored already, made ahead in groups', async () => {
    const first = await keys.newRecordId('customer-');
    await settled();
    // Nothing was ready: its own key, and a group made ahead.
    expect(obtain).toHaveBeenCalledTimes(1 + SPARE_KEYS);
    const ids: string[] = [];
    for (let i = 0; i < SPARE_KEYS / 2; i++) ids.push(await keys.newRecordId('customer-'));
    expect(obtain).toHaveBeenCalledTimes(1 + SPARE_KEYS); // taken from the group: no key store call of their own

    const all = [first, ...ids];
    for (const id of all) expect(id).toMatch(UUID_V4);
    expect(new Set(all).size).toBe(all.length);
    const stored = await keyStore.getMany(all.map((id) => `customer-${id}`));
    expect([...stored.values()].filter((key) => key?.length === 32)).toHaveLength(all.length);

    // Half left: the next call takes one, leaving fewer than half, and the one after starts the next group.
    await keys.newRecordId('customer-');
    await settled();
    expect(obtain).toHaveBeenCalledTimes(1 + SPARE_KEYS);
    await keys.newRecordId('customer-');
    await settled();
    expect(obtain).toHaveBeenCalledTimes(1 + 2 * SPARE_KEYS);
    // Another prefix has groups of its own.
    await keys.newRecordId('profile-');
    await settled();
    expect(obtain).toHaveBeenCalledTimes(2 + 3 * SPARE_KEYS); // its own key and a group, all of that prefix
    expect(obtain.mock.calls.slice(1 + 2 * SPARE_KEYS).filter(([keyId]) => (keyId as string).startsWith('profile-'))).toHaveLength(1 + SPARE_KEYS);
    // A group is asked for a few at a time (on MongoDB, a pooled connection each), beside a create's own key.
    expect(mostAtOnce).toBe(KEYS_MADE_AT_ONCE + 1);
  });

  it('keeps the keys made ahead apart from the cache: reads of other records do not push them out', async () => {
    const small = new DataKeys(keyStore, 64);
    await small.newRecordId('customer-');
    await settled();
    const made = obtain.mock.calls.length;
    // Other records' keys read through the cache, many times its size.
    const others = Array.from({ length: 500 }, (_, i) => `profile-${i}`);
    await Promise.all(others.map((keyId) => keyStore.obtain(keyId, { isNew: true })));
    await small.forReading(others);
    obtain.mockClear();

    const id = await small.newRecordId('customer-');
    const key = await small.forWriting(`customer-${id}`);
    expect(obtain).not.toHaveBeenCalled(); // handed out with its key: no key store call
    expect((await keyStore.getMany([`customer-${id}`])).get(`customer-${id}`)).toEqual(key);
    expect(made).toBe(1 + SPARE_KEYS);
  });

  it('makes the key at once when the group made ahead failed, and asks for the keys it still wants again by itself, waiting longer each time', async () => {
    // The key store fails the calls these are (counted from 1, in order), and notes when each was made.
    const failed = new Set<number>();
    const calledAt: number[] = [];
    const real = obtain.getMockImplementation()!;
    obtain.mockImplementation((...args: Parameters<SqliteKeyStore['obtain']>) => {
      calledAt.push(Date.now());
      return failed.has(calledAt.length) ? Promise.reject(new Error('key store unavailable')) : real(...args);
    });
    const K = KEYS_MADE_AT_ONCE;
    // Calls 1 to K: the group's first round trip, which succeeds; K + 1: the create's own key; the
    // second round trip fails, and so does the first retry; the second retry makes the rest.
    for (let call = K + 2; call <= 3 * K + 1; call++) failed.add(call);

    const id = await keys.newRecordId('customer-');
    expect((await keyStore.getMany([`customer-${id}`])).get(`customer-${id}`)).toHaveLength(32);
    // With no create, the rest of the group is asked for again after the first pause; failing again, after twice as long.
    const made = 1 + SPARE_KEYS + 2 * K;
    while (obtain.mock.calls.length < made) await new Promise((resolve) => setTimeout(resolve, 10));
    await settled();
    expect(obtain).toHaveBeenCalledTimes(made);
    expect(calledAt[2 * K + 1] - calledAt[K + 1]).toBeGreaterThanOrEqual(KEYS_RETRY_FIRST_MS - 2);
    expect(calledAt[3 * K + 1] - calledAt[2 * K + 1]).toBeGreaterThanOrEqual(2 * KEYS_RETRY_FIRST_MS - 2);

    // The keys made: the group's whole count, no more (the first round trip's, and the rest's), handed out without a key store call.
    const ids = new Set<string>();
    for (let i = 0; i < SPARE_KEYS / 2; i++) ids.add(await keys.newRecordId('customer-'));
    expect(ids.size).toBe(SPARE_KEYS / 2);
    expect(obtain).toHaveBeenCalledTimes(made);
  });

  it('asks for no more keys once closed', async () => {
    for (let i = 0; i < KEYS_MADE_AT_ONCE; i++) obtain.mockRejectedValueOnce(new Error('key store unavailable'));
    await keys.newRecordId('customer-');
    await settled();
    const asked = obtain.mock.calls.length;
    await keys.close();
    await new Promise((resolve) => setTimeout(resolve, 2 * KEYS_RETRY_FIRST_MS));
    expect(obtain).toHaveBeenCalledTimes(asked);
  });

  it('hands out the keys of each round trip of a group as it ends, and keeps those made when a later one fails', async () => {
    /** A key store whose answers the test gives. */
    const asked: { keyId: string; resolve: (key: Buffer) => void; reject: (error: Error) => void }[] = [];
    const store = {
      obtain: (keyId: string) => new Promise<Buffer>((resolve, reject) => asked.push({ keyId, resolve, reject })),
      close: () => Promise.resolve(),
    } as unknown as KeyStore;
    const scripted = new DataKeys(store);
    const turn = () => new Promise(setImmediate);

    // None ready: a group's first round trip, and the create's own key, asked last.
    const first = scripted.newRecordId('customer-');
    expect(asked).toHaveLength(KEYS_MADE_AT_ONCE + 1);
    asked[KEYS_MADE_AT_ONCE].resolve(Buffer.alloc(32, 1));
    await first;
    const firstTrip = asked.slice(0, KEYS_MADE_AT_ONCE);
    firstTrip.forEach((a) => a.resolve(Buffer.alloc(32, 2)));
    await turn();
    // The next round trip is under way, and the first one's ids are handed out meanwhile.
    expect(asked).toHaveLength(2 * KEYS_MADE_AT_ONCE + 1);
    const handed = [await scripted.newRecordId('customer-')];
    expect(firstTrip.map((a) => a.keyId)).toContain(`customer-${handed[0]}`);

    // One key of the second round trip fails: the others are kept, and the group stops there.
    const secondTrip = asked.slice(KEYS_MADE_AT_ONCE + 1);
    secondTrip[0].reject(new Error('key store unavailable'));
    secondTrip.slice(1).forEach((a) => a.resolve(Buffer.alloc(32, 3)));
    await turn();
    expect(asked).toHaveLength(2 * KEYS_MADE_AT_ONCE + 1);
    for (let i = 0; i < 2 * KEYS_MADE_AT_ONCE - 2; i++) handed.push(await scripted.newRecordId('customer-'));
    const made = [...firstTrip, ...secondTrip.slice(1)].map((a) => a.keyId).sort();
    expect(handed.map((id) => `customer-${id}`).sort()).toEqual(made);
    // The rest of the group waits to be asked for again: closing stops that.
    await scripted.close();
  });
});
