import type { Document } from 'mongodb';
import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { SilentMongo, startSilentMongo } from '../support/scripted-mongodb';

/**
 * The MongoDB adapter against a scripted endpoint (test/support/scripted-mongodb.ts) that completes
 * the handshake and answers only what each test scripts: what the adapter sends and how it takes
 * the answers, not a test against MongoDB (see test/contract).
 */
let mongo: SilentMongo | undefined;
let store: MongoDbReadStore | undefined;
afterEach(async () => {
  await store?.close().catch(() => undefined);
  await mongo?.close();
  store = mongo = undefined;
});

/** What ensureCollection asks, answered as a server holding `model` (a read_models document) in database `db` would; null for anything else. */
function ensureCollectionReply(command: Document, db: string, model: Document): Document | null {
  if (command.update === 'read_models' || command.update === 'read_model_generations') return { n: 1, nModified: 0, ok: 1 };
  if (command.createIndexes) return { ok: 1 };
  if (command.find === 'read_models') return { cursor: { firstBatch: [model], id: 0n, ns: `${db}.read_models` }, ok: 1 };
  return null;
}

describe('MongoDB adapter: every operation is bounded by STORE_TIMEOUT_MS (finding 11)', () => {
  it('fails an operation the server never answers with StoreUnavailableError', async () => {
    mongo = await startSilentMongo();
    store = await MongoDbReadStore.connect(mongo.uri, 'silent', 500);
    const schema = { name: 'customers', filters: {} };
    await expect(store.ensureCollection(schema)).rejects.toThrow(StoreUnavailableError);
    expect(mongo.unanswered.length).toBeGreaterThan(0);
  });
});

describe('MongoDB adapter: a bulk write cut off is unavailable, not a bug (finding 12)', () => {
  it('answers StoreUnavailableError when the server stops answering during a commit\'s bulk write', async () => {
    // Answers what ensureCollection and commit ask before writing documents, as a server with one
    // read model would; leaves the documents' bulk write (an `update` on rm_customers__g1) unanswered.
    mongo = await startSilentMongo((command) => ensureCollectionReply(command, 'cut', { _id: 'customers', live: 1, building: null, next: 2 }));
    store = await MongoDbReadStore.connect(mongo.uri, 'cut', 500);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    await expect(store.commit('customers', [doc], { generation: 1, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(
      StoreUnavailableError,
    );
    expect(mongo.unanswered).toContain('update');
  });
});

describe('MongoDB adapter: an erasure of several records scrubs each of them in every generation', () => {
  it('sends one update per generation that still has storage, matching every id and changing every match', async () => {
    // A read model with a live and a building generation; the updates on their documents are kept.
    const scrubs: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.find === 'read_model_generations') {
        const generations = [1, 2].map((generation) => ({ _id: `customers:${generation}`, collection: 'customers', generation }));
        return { cursor: { firstBatch: generations, id: 0n, ns: 'erase.read_model_generations' }, ok: 1 };
      }
      if (typeof command.update === 'string' && command.update.startsWith('rm_customers__g')) {
        scrubs.push(command);
        return { n: 2, nModified: 2, ok: 1 };
      }
      return ensureCollectionReply(command, 'erase', { _id: 'customers', live: 1, building: 2, next: 3 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'erase', 2000);
    await store.ensureCollection({ name: 'customers', filters: { email: 'exact-ci' } });

    await store.erase('customers', ['c1', 'c2']);

    expect(scrubs.map((c) => c.update)).toEqual(['rm_customers__g1', 'rm_customers__g2']);
    for (const { updates } of scrubs) {
      expect(updates).toEqual([
        expect.objectContaining({
          q: { _id: { $in: ['c1', 'c2'] } },
          u: { $set: { fields: {}, deleted: true, 'match.email': '' } },
          multi: true,
        }),
      ]);
    }
  });
});
