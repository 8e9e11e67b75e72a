import { MongoClient } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { GENERATIONS_COLLECTION, generationId, READ_MODELS_COLLECTION, readModelCollection, toMongoCheckpoint } from '../../src/read-store/mongodb-mapping';
import { CollectionSchema, GenerationReplacedError, RebuildBehindError } from '../../src/read-store/read-store.port';
import { readStoreContract } from './read-store.contract';

/**
 * The ReadStore contract against a live MongoDB, when MONGODB_URI points at one
 * (`docker compose up -d mongo`, then `npm run test:integration`). Each run works in a database
 * of its own and drops it afterwards.
 */
const uri = process.env.MONGODB_URI;

/** A store in a database of its own, and a plain client on the same database to set up what a crash leaves. */
async function openMongo() {
  const database = `contract_${randomUUID().slice(0, 8)}`;
  const store = await MongoDbReadStore.connect(uri!, database, 10_000);
  const client = await MongoClient.connect(uri!);
  return {
    store,
    db: client.db(database),
    async dispose() {
      await store.close();
      await client.db(database).dropDatabase();
      await client.close();
    },
  };
}

if (uri) {
  readStoreContract('MongoDB', async () => {
    const { store, dispose } = await openMongo();
    return { store, dispose };
  });

  describe('MongoDB read store: what a crash leaves behind', () => {
    let mongo: Awaited<ReturnType<typeof openMongo>>;
    const schema: CollectionSchema = { name: 'crash', filters: { company: 'contains-ci' } };
    beforeEach(async () => {
      mongo = await openMongo();
      await mongo.store.ensureCollection(schema);
    });
    afterEach(() => mongo.dispose());

    it('starts a rebuild over the half-made generation an earlier version left (document and collection made, number not taken)', async () => {
      await mongo.db.collection(GENERATIONS_COLLECTION).insertOne({
        _id: generationId('crash', 2) as never,
        collection: 'crash',
        generation: 2,
        failure: null,
        updatedAt: new Date(),
      });
      await mongo.db.createCollection(readModelCollection('crash', 2));
      await expect(mongo.store.startRebuild('crash')).resolves.toBe(2);
      await expect(mongo.store.status('crash')).resolves.toMatchObject({ building: { generation: 2, position: null } });
    });

    it('drops a generation claimed by a rebuild that crashed before making it, and starts the next one', async () => {
      await mongo.db.collection(READ_MODELS_COLLECTION).updateOne({ _id: 'crash' as never }, { $set: { building: 2, next: 3 } });
      await expect(mongo.store.startRebuild('crash')).resolves.toBe(3);
      await expect(mongo.store.status('crash')).resolves.toMatchObject({ live: { generation: 1 }, building: { generation: 3 } });
    });

    it('drops again, and refuses, a commit whose generation was dropped after its check: its writes made the collection again', async () => {
      const building = await mongo.store.startRebuild('crash');
      const store = mongo.store as unknown as { writeGuarded: (...args: unknown[]) => Promise<void> };
      const write = store.writeGuarded.bind(mongo.store);
      // The rebuild is given up between the commit's check and its writes.
      jest.spyOn(store, 'writeGuarded').mockImplementationOnce(async (...args) => {
        await mongo.store.abandonRebuild('crash', building);
        await write(...args);
      });
      const doc = { id: randomUUID(), accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: { company: 'Acme' } };
      await expect(mongo.store.commit('crash', [doc], { generation: building, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(
        GenerationReplacedError,
      );
      const names = (await mongo.db.listCollections().toArray()).map((c) => c.name);
      expect(names).not.toContain(readModelCollection('crash', building));
    });

    it('refuses a commit into the live generation that a promotion replaced while it wrote, its checkpoint unmoved', async () => {
      const at = (n: bigint) => ({ commit: n, prepare: n });
      await mongo.store.commit('crash', [], { generation: 1, position: at(5n) });
      const building = await mongo.store.startRebuild('crash');
      await mongo.store.commit('crash', [], { generation: building, position: at(5n) });
      const store = mongo.store as unknown as { writeGuarded: (...args: unknown[]) => Promise<void> };
      const write = store.writeGuarded.bind(mongo.store);
      // The rebuild is promoted between the commit's check and its writes.
      jest.spyOn(store, 'writeGuarded').mockImplementationOnce(async (...args) => {
        await mongo.store.promote('crash', building);
        await write(...args);
      });
      const doc = { id: randomUUID(), accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: { company: 'Acme' } };
      await expect(mongo.store.commit('crash', [doc], { generation: 1, position: at(6n) })).rejects.toThrow(GenerationReplacedError);
      const generations = mongo.db.collection(GENERATIONS_COLLECTION);
      await expect(generations.findOne({ _id: generationId('crash', 1) as never })).resolves.toMatchObject({ commit: '5' });
      await expect(mongo.store.status('crash')).resolves.toMatchObject({ live: { generation: building, position: at(5n) } });
    });

    it("refuses a promotion whose swap finds the live checkpoint past the rebuild's, though the checkpoints it read before were even", async () => {
      const at = (n: bigint) => ({ commit: n, prepare: n });
      const building = await mongo.store.startRebuild('crash');
      await mongo.store.commit('crash', [], { generation: building, position: at(5n) });
      await mongo.store.commit('crash', [], { generation: 1, position: at(6n) });
      // As a promotion reading the live checkpoint just before that commit saved it: only the swap's own filter sees the commit.
      await mongo.db.collection(GENERATIONS_COLLECTION).updateOne({ _id: generationId('crash', 1) as never }, { $set: toMongoCheckpoint(at(5n)) });
      await expect(mongo.store.promote('crash', building)).rejects.toThrow(RebuildBehindError);
      await expect(mongo.store.status('crash')).resolves.toMatchObject({ live: { generation: 1 }, building: { generation: building } });
    });

    it('erases in a collection of the read model its records call dropped (left by a crash before it was dropped again)', async () => {
      const building = await mongo.store.startRebuild('crash');
      await mongo.store.abandonRebuild('crash', building);
      const id = randomUUID();
      await mongo.db
        .collection(readModelCollection('crash', building))
        .insertOne({ _id: id as never, accountId: 'acc', fields: { company: 'Acme' }, deleted: false });
      await mongo.store.erase('crash', [id]);
      await expect(mongo.db.collection(readModelCollection('crash', building)).findOne({ _id: id as never })).resolves.toMatchObject({
        fields: {},
        deleted: true,
      });
    });

    it('drops a generation replaced by a promotion that crashed before stamping it retired', async () => {
      const next = await mongo.store.startRebuild('crash');
      await mongo.store.commit('crash', [], { generation: next, position: { commit: 0n, prepare: 0n } });
      // The swap happened; the retiredAt stamp on generation 1 did not.
      await mongo.db.collection(READ_MODELS_COLLECTION).updateOne({ _id: 'crash' as never }, { $set: { live: next, building: null } });
      await mongo.store.dropRetired('crash', 0);
      const names = (await mongo.db.listCollections().toArray()).map((c) => c.name);
      expect(names).not.toContain(readModelCollection('crash', 1));
      expect(names).toContain(readModelCollection('crash', next));
    });
  });
} else {
  // Jest shows nothing a skipped file prints: the title carries the reason, listed by test/support/skipped-reporter.js.
  describe.skip('ReadStore contract: MongoDB', () => {
    it('needs MONGODB_URI, which is not set (e.g. mongodb://localhost:27017/?directConnection=true; see docs/operators.md)', () => undefined);
  });
}
