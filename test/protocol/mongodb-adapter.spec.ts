import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { SilentMongo, startSilentMongo } from '../support/scripted-mongodb';

/**
 * The MongoDB adapter against an endpoint that completes the handshake and then never answers a
 * command (test/support/scripted-mongodb.ts): not a test against MongoDB (see test/contract).
 */
describe('MongoDB adapter: every operation is bounded by STORE_TIMEOUT_MS (finding 11)', () => {
  let mongo: SilentMongo;
  let store: MongoDbReadStore | undefined;
  beforeAll(async () => (mongo = await startSilentMongo()));
  afterAll(async () => {
    await mongo.close();
    await store?.close().catch(() => undefined);
  });

  it('fails an operation the server never answers with StoreUnavailableError', async () => {
    store = await MongoDbReadStore.connect(mongo.uri, 'silent', 500);
    const schema = { name: 'customers', filters: {} };
    await expect(store.ensureCollection(schema)).rejects.toThrow(StoreUnavailableError);
    expect(mongo.unanswered.length).toBeGreaterThan(0);
  });
});

describe('MongoDB adapter: a bulk write cut off is unavailable, not a bug (finding 12)', () => {
  let mongo: SilentMongo;
  let store: MongoDbReadStore | undefined;
  afterAll(async () => {
    await mongo?.close();
    await store?.close().catch(() => undefined);
  });

  it('answers StoreUnavailableError when the server stops answering during a commit\'s bulk write', async () => {
    // Answers what ensureCollection and commit ask before writing documents, as a server with one
    // read model would; leaves the documents' bulk write (an `update` on rm_customers__g1) unanswered.
    mongo = await startSilentMongo((command) => {
      if (command.update === 'read_models' || command.update === 'read_model_generations') return { n: 1, nModified: 0, ok: 1 };
      if (command.createIndexes) return { ok: 1 };
      if (command.find === 'read_models') {
        const model = { _id: 'customers', live: 1, building: null, next: 2 };
        return { cursor: { firstBatch: [model], id: 0n, ns: 'cut.read_models' }, ok: 1 };
      }
      return null;
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'cut', 500);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    await expect(store.commit('customers', [doc], { generation: 1, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(
      StoreUnavailableError,
    );
    expect(mongo.unanswered).toContain('update');
  });
});
