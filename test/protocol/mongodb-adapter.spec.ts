import type { Document } from 'mongodb';
import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { GenerationReplacedError } from '../../src/read-store/read-store.port';
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
  it('sends one update per collection of the read model there is, by name, matching every id and changing every match', async () => {
    // The live and building generations' collections, and one the generations' records call
    // dropped, made again by a commit that wrote as it was dropped; the updates on them are kept.
    const scrubs: Document[] = [];
    let listed: Document | undefined;
    mongo = await startSilentMongo((command) => {
      if (command.listCollections) {
        listed = command;
        const names = [1, 2, 3].map((generation) => ({ name: `rm_customers__g${generation}`, type: 'collection' }));
        return { cursor: { firstBatch: names, id: 0n, ns: 'erase.$cmd.listCollections' }, ok: 1 };
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

    expect(listed).toMatchObject({ filter: { name: /^rm_customers__g[0-9]+$/ }, nameOnly: true });
    expect(scrubs.map((c) => c.update)).toEqual(['rm_customers__g1', 'rm_customers__g2', 'rm_customers__g3']);
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

describe('MongoDB adapter: a commit whose generation is dropped while it writes', () => {
  it('drops the collection its writes made again, and refuses the commit', async () => {
    // Generation 2 is building when the commit checks it; once its documents are written, its
    // record says a rebuild dropped it meanwhile.
    const seen: string[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'rm_customers__g2') {
        seen.push('write rm_customers__g2');
        return { n: 1, nModified: 0, upserted: [{ index: 0, _id: 'c1' }], ok: 1 };
      }
      if (command.find === 'read_model_generations') {
        const dropped = { _id: 'customers:2', collection: 'customers', generation: 2, dropped: true };
        return { cursor: { firstBatch: [dropped], id: 0n, ns: 'late.read_model_generations' }, ok: 1 };
      }
      if (command.drop) {
        seen.push(`drop ${command.drop}`);
        return { ok: 1 };
      }
      return ensureCollectionReply(command, 'late', { _id: 'customers', live: 1, building: 2, next: 3 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'late', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    await expect(store.commit('customers', [doc], { generation: 2, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(
      GenerationReplacedError,
    );
    expect(seen).toEqual(['write rm_customers__g2', 'drop rm_customers__g2']);
  });
});
