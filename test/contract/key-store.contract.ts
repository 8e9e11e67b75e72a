import { randomUUID } from 'node:crypto';
import type { KeyStore } from '../../src/key-store/key-store.port';

/** What every KeyStore adapter must do. Key ids are unique per run. */
export function keyStoreContract(adapter: string, open: () => Promise<{ store: KeyStore; dispose(): Promise<void> }>) {
  describe(`KeyStore contract: ${adapter}`, () => {
    let store: KeyStore;
    let dispose: () => Promise<void>;
    const id = (prefix = 'customer') => `${prefix}-${randomUUID()}`;

    beforeAll(async () => ({ store, dispose } = await open()));
    afterAll(() => dispose?.());

    it('makes a 32-byte key on first use and answers the same one afterwards', async () => {
      const keyId = id();
      const key = await store.obtain(keyId);
      expect(key).toBeInstanceOf(Buffer);
      expect(key!.length).toBe(32);
      expect(await store.obtain(keyId)).toEqual(key);
      expect(await store.getMany([keyId])).toEqual(new Map([[keyId, key]]));
    });

    it('gives every record a key of its own, also when many are made at once', async () => {
      const keyIds = Array.from({ length: 20 }, () => id());
      const keys = await Promise.all([...keyIds, ...keyIds].map((k) => store.obtain(k)));
      expect(keys.slice(0, 20)).toEqual(keys.slice(20)); // asked twice at once: one key each
      expect(new Set(keys.map((k) => k!.toString('hex'))).size).toBe(20);
    });

    it('answers a key asked for as new (isNew) the same as any other: made once, kept, null once destroyed', async () => {
      const keyId = id();
      const key = await store.obtain(keyId, { isNew: true });
      expect(key!.length).toBe(32);
      expect(await store.obtain(keyId, { isNew: true })).toEqual(key); // a retried create keeps its key
      expect(await store.obtain(keyId)).toEqual(key);
      await store.destroy(keyId, 'acc-1');
      expect(await store.obtain(keyId, { isNew: true })).toBeNull();
    });

    it('leaves out of getMany the ids that never had a key', async () => {
      const [made, never] = [id(), id()];
      const key = await store.obtain(made);
      expect(await store.getMany([made, never])).toEqual(new Map([[made, key]]));
      expect(await store.getMany([])).toEqual(new Map());
    });

    it('destroys a key for good: null to every read, never made again, idempotent', async () => {
      const keyId = id();
      await store.obtain(keyId);
      await store.destroy(keyId, 'acc-1');
      await store.destroy(keyId, 'acc-1');
      expect(await store.obtain(keyId)).toBeNull();
      expect(await store.getMany([keyId])).toEqual(new Map([[keyId, null]]));
    });

    it('names the destroyed keys among ids, whether or not the others have a key', async () => {
      const [kept, destroyed, never] = [id(), id(), id()];
      await store.obtain(kept);
      await store.obtain(destroyed);
      await store.destroy(destroyed, 'acc-1');
      expect(await store.destroyedAmong([kept, destroyed, never])).toEqual(new Set([destroyed]));
      expect(await store.destroyedAmong([destroyed])).toEqual(new Set([destroyed]));
      expect(await store.destroyedAmong([kept])).toEqual(new Set());
      expect(await store.destroyedAmong([])).toEqual(new Set());
      // More ids than a page, as one statement takes any number.
      const many = [...Array.from({ length: 150 }, () => id()), destroyed];
      expect(await store.destroyedAmong(many)).toEqual(new Set([destroyed]));
    });

    it('leaves destroyed, for good, a key destroyed while it is made', async () => {
      const keyIds = Array.from({ length: 20 }, () => id());
      await Promise.all(keyIds.flatMap((k) => [store.obtain(k, { isNew: true }), store.destroy(k, 'acc-1')]));
      for (const k of keyIds) expect(await store.obtain(k)).toBeNull();
      expect((await store.pendingErasures('customer-')).map((p) => p.keyId)).toEqual(expect.arrayContaining(keyIds));
      for (const k of keyIds) await store.finishErasure(k);
    });

    it('destroys the key of an id that never had one, so none is made for it later', async () => {
      const keyId = id();
      await store.destroy(keyId, 'acc-1');
      expect(await store.obtain(keyId)).toBeNull();
    });

    it("makes a destroyed key's erasure pending again, naming who erased it first; nothing for a key not destroyed", async () => {
      const [erased, kept, never] = [id(), id(), id()];
      await store.destroy(erased, 'acc-1');
      await store.finishErasure(erased);
      // An account is any text after ACCESS_TOKENS' colon, one starting with $ too (taken as such, never as an expression).
      await store.reopenErasure(erased, '$$restore');
      expect(await store.pendingErasures('customer-')).toContainEqual({ keyId: erased, erasedBy: 'acc-1' });
      const key = await store.obtain(kept);
      await store.reopenErasure(kept, '$$restore');
      await store.reopenErasure(never, '$$restore');
      const pending = (await store.pendingErasures('customer-')).map((p) => p.keyId);
      expect(pending).not.toContain(kept);
      expect(pending).not.toContain(never);
      expect(await store.getMany([erased, kept, never])).toEqual(
        new Map([
          [erased, null],
          [kept, key],
        ]),
      );
      await store.finishErasure(erased);
    });

    it('keeps an erasure pending, by prefix, until it is finished', async () => {
      const [customer, profile] = [id('customer'), id('profile')];
      await store.destroy(customer, 'acc-1');
      await store.destroy(profile, 'acc-2');
      const pending = await store.pendingErasures('customer-');
      expect(pending).toContainEqual({ keyId: customer, erasedBy: 'acc-1' });
      expect(pending.map((p) => p.keyId)).not.toContain(profile);
      await store.finishErasure(customer);
      expect((await store.pendingErasures('customer-')).map((p) => p.keyId)).not.toContain(customer);
      expect(await store.pendingErasures('profile-')).toContainEqual({ keyId: profile, erasedBy: 'acc-2' });
      await store.finishErasure(profile);
      // Finished stays destroyed, its tombstone kept (null, never absent: absent is a key not there yet),
      // and a second destroy does not make it pending again.
      expect(await store.getMany([customer])).toEqual(new Map([[customer, null]]));
      await store.destroy(customer, 'acc-1');
      expect(await store.obtain(customer)).toBeNull();
      expect((await store.pendingErasures('customer-')).map((p) => p.keyId)).not.toContain(customer);
    });
  });
}
