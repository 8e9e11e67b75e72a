import { Binary, Document } from 'mongodb';
import { randomUUID } from 'node:crypto';
import { customerProjection } from '../../src/customers/customer.projection';
import { DataKeys } from '../../src/sealing/data-keys';
import { MongoDbKeyStore } from '../../src/key-store/mongodb-key-store';
import { SealedEventStore } from '../../src/sealing/sealed-event-store';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { rebuildProjections } from '../../src/projections/rebuild';
import { RECORD_KINDS } from '../../src/read-models';
import { substringQuery } from '../../src/read-store/substrings';
import { MongoDbReadStore } from '../../src/read-store/mongodb-read-store';
import { toMongoCheckpoint } from '../../src/read-store/mongodb-mapping';
import { schemaFingerprint } from '../../src/read-store/generation-rules';
import { FilterNotBuiltError, GenerationReplacedError, ParkedStream, ParkedStreamMovedError, RebuildBehindError } from '../../src/read-store/read-store.port';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { ScriptedReplicaSet, SilentMongo, startScriptedReplicaSet, startSilentMongo } from '../support/scripted-mongodb';
import { openTempSqlite } from '../support/temp-sqlite';

/**
 * The MongoDB adapter against a scripted endpoint (test/support/scripted-mongodb.ts) that completes
 * the handshake and answers only what each test scripts: what the adapter sends and how it takes
 * the answers, not a test against MongoDB (see test/contract).
 */
let mongo: SilentMongo | undefined;
let rs: ScriptedReplicaSet | undefined;
let store: MongoDbReadStore | undefined;
afterEach(async () => {
  await store?.close().catch(() => undefined);
  await mongo?.close();
  await rs?.close();
  store = mongo = rs = undefined;
});

/** What ensureCollection asks, answered as a server holding `model` (a read_models document) in database `db` would; null for anything else. */
function ensureCollectionReply(command: Document, db: string, model: Document): Document | null {
  if (command.update === 'read_models' || command.update === 'read_model_generations') return { n: 1, nModified: 0, ok: 1 };
  if (command.createIndexes) return { ok: 1 };
  // What a dropped generation had parked goes with it: nothing, here.
  if (['read_model_parked', 'read_model_skipped', 'read_model_parked_requests'].includes(command.delete)) return { n: 0, ok: 1 };
  if (command.find === 'read_models') return { cursor: { firstBatch: [model], id: 0n, ns: `${db}.read_models` }, ok: 1 };
  if (command.find === 'read_model_generations') {
    // Made by this version: it keeps the schema it was built with.
    const generation = { _id: `${model._id}:${model.live}`, substrings: true, fingerprint: 'built-with', filters: {} };
    return { cursor: { firstBatch: [generation], id: 0n, ns: `${db}.read_model_generations` }, ok: 1 };
  }
  return null;
}

describe('MongoDB adapter: every operation is bounded by STORE_TIMEOUT_MS', () => {
  it('fails an operation the server never answers with StoreUnavailableError', async () => {
    mongo = await startSilentMongo();
    store = await MongoDbReadStore.connect(mongo.uri, 'silent', 500);
    const schema = { name: 'customers', filters: {} };
    await expect(store.ensureCollection(schema)).rejects.toThrow(StoreUnavailableError);
    expect(mongo.unanswered.length).toBeGreaterThan(0);
  });
});

describe('MongoDB adapter: a start builds no substring index on a generation made before it came', () => {
  it.each([
    [true, ['live_by_account', 'live_by_email', 'live_by_mobile', 'live_by_substrings']],
    [false, ['live_by_account', 'live_by_email', 'live_by_mobile']],
  ])('with the generation saying substrings: %s, asks for %j', async (substrings, names) => {
    const asked: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) asked.push(command);
      if (command.find === 'read_model_generations') {
        // An upgraded store's live generation has no `substrings` at all: false reads alike.
        const generation = { _id: 'customers:1', ...(substrings ? { substrings } : {}) };
        return { cursor: { firstBatch: [generation], id: 0n, ns: 'upgraded.read_model_generations' }, ok: 1 };
      }
      return ensureCollectionReply(command, 'upgraded', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'upgraded', 500);
    await store.ensureCollection(customerProjection.schema);
    // The generation's own, then those of the parked streams and skips.
    expect(asked.map((c) => c.createIndexes)).toEqual(['rm_customers__g1', 'read_model_parked', 'read_model_skipped']);
    expect(asked[0].indexes.map((i: Document) => i.name)).toEqual(names);
  });
});

describe('MongoDB adapter: each generation keeps the schema it was built with', () => {
  const schema = customerProjection.schema;
  const olderFilters = { email: schema.filters.email, company: schema.filters.company };

  it('stamps a live generation made before generations kept their schema with the current one, once', async () => {
    const stamps: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'read_model_generations' && !command.updates[0].upsert) stamps.push(command.updates[0]);
      if (command.find === 'read_model_generations') {
        return { cursor: { firstBatch: [{ _id: 'customers:1', substrings: true }], id: 0n, ns: 'upgraded.read_model_generations' }, ok: 1 };
      }
      return ensureCollectionReply(command, 'upgraded', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'upgraded', 2000);
    await store.ensureCollection(schema);
    expect(stamps).toEqual([
      { q: { _id: 'customers:1', fingerprint: { $exists: false } }, u: { $set: { fingerprint: schemaFingerprint(schema), filters: schema.filters } } },
    ]);
  });

  it('writes and reads a generation built without a filter by its own filters: the one it lacks answers FilterNotBuiltError', async () => {
    const written: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'rm_customers__g1') {
        written.push(...command.updates.map((u: Document) => u.u));
        return { n: 1, nModified: 0, upserted: [{ index: 0, _id: 'c1' }], ok: 1 };
      }
      if (command.find === 'read_model_generations') {
        const built = { _id: 'customers:1', substrings: true, fingerprint: schemaFingerprint({ ...schema, filters: olderFilters }), filters: olderFilters };
        return { cursor: { firstBatch: [built], id: 0n, ns: 'older.read_model_generations' }, ok: 1 };
      }
      return ensureCollectionReply(command, 'older', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'older', 2000);
    await store.ensureCollection(schema);
    const fields = { email: 'Ann@x.io', mobile: '0711', company: 'Acme' };
    await store.commit('customers', [{ id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields }], {
      generation: 1,
      position: { commit: 1n, prepare: 1n },
    });
    expect(written.map((d) => d.match)).toEqual([{ email: 'ann@x.io', company: 'acme' }]);
    const byMobile = { accountId: 'acc', filters: { mobile: '0711' }, order: 'newest' as const, offset: 0, limit: 10 };
    await expect(store.find('customers', byMobile)).rejects.toBeInstanceOf(FilterNotBuiltError);
  });
});

describe('MongoDB adapter: a bulk write cut off is unavailable, not a bug', () => {
  it("answers StoreUnavailableError when the server stops answering during a commit's bulk write", async () => {
    // Answers what ensureCollection and commit ask before writing documents, as a server with one
    // read model would; leaves the documents' bulk write (an `update` on rm_customers__g1) unanswered.
    mongo = await startSilentMongo((command) => ensureCollectionReply(command, 'cut', { _id: 'customers', live: 1, building: null, next: 2 }));
    store = await MongoDbReadStore.connect(mongo.uri, 'cut', 500);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    await expect(store.commit('customers', [doc], { generation: 1, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(StoreUnavailableError);
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
          // The substring tokens too: they are pieces of the values. The whole match, so that the
          // value of a filter an earlier release had (no longer in the schema) goes too.
          u: { $set: { fields: {}, deleted: true, match: { email: '' }, substrings: [] } },
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
    await expect(store.commit('customers', [doc], { generation: 2, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(GenerationReplacedError);
    expect(seen).toEqual(['write rm_customers__g2', 'drop rm_customers__g2']);
  });
});

/** A `find` reply: the documents as one batch, the cursor closed. */
const cursor = (ns: string, documents: Document[]) => ({ cursor: { firstBatch: documents, id: 0n, ns }, ok: 1 });

describe('MongoDB adapter: an overloaded server', () => {
  it('answers a list the server refuses as overloaded as unavailable after one retry, not after as many as the server times', async () => {
    let finds = 0;
    mongo = await startSilentMongo((command) => {
      if (command.find === 'rm_customers__g1') {
        finds += 1;
        const overloaded = { ok: 0, code: 462, codeName: 'IngressRequestRateLimitExceeded', errmsg: 'rate limit exceeded' };
        return { ...overloaded, errorLabels: ['SystemOverloadedError', 'RetryableError'], baseBackoffMS: 100 };
      }
      if (command.aggregate === 'rm_customers__g1') return { cursor: { firstBatch: [], id: 0n, ns: 'busy.rm_customers__g1' }, ok: 1 };
      return ensureCollectionReply(command, 'busy', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'busy', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const started = Date.now();
    await expect(store.find('customers', { accountId: 'acc', filters: {}, order: 'newest', offset: 0, limit: 10 })).rejects.toThrow(StoreUnavailableError);
    // One retry (maxAdaptiveRetries=1; the driver's default is two).
    expect(finds).toBe(2);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('MongoDB adapter: retired generations are timed by the server, not by the instance', () => {
  it("stamps the retirements promote did not with the server's date, and drops what is past the grace by the server's clock", async () => {
    // Instances' clocks may differ by more than the grace (10 s by default): before, a generation
    // stamped by one instance could be dropped early by another, under reads still on it; and one
    // promote did not live to stamp was dropped at once if it had not changed for the grace.
    const sent: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'read_model_generations' && command.updates[0].multi) return (sent.push(command), { n: 1, nModified: 1, ok: 1 });
      if (command.find === 'read_model_generations' && command.filter.generation) {
        sent.push(command);
        return {
          cursor: { firstBatch: [{ _id: 'customers:1', collection: 'customers', generation: 1 }], id: 0n, ns: 'retired.read_model_generations' },
          ok: 1,
        };
      }
      if (command.drop) return (sent.push(command), { ok: 1 });
      if (command.update === 'read_model_generations' && command.updates[0].u.$set?.dropped) return (sent.push(command), { n: 1, nModified: 1, ok: 1 });
      return ensureCollectionReply(command, 'retired', { _id: 'customers', live: 2, building: null, next: 3 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'retired', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    await store.dropRetired('customers', 10_000);
    const below = { collection: 'customers', generation: { $lt: 2 }, dropped: { $ne: true } };
    expect(sent[0].updates[0]).toMatchObject({ q: { ...below, retiredAt: { $exists: false } }, u: { $currentDate: { retiredAt: true } }, multi: true });
    expect(sent[1].filter).toEqual({ ...below, $expr: { $lte: ['$retiredAt', { $subtract: ['$$NOW', 10_000] }] } });
    expect(sent[2]).toMatchObject({ drop: 'rm_customers__g1' });
    expect(sent[3].updates[0].u).toEqual({ $set: { dropped: true }, $currentDate: { updatedAt: true } });
  });

  it("stamps a commit's checkpoint and a recorded failure with the server's date", async () => {
    const stamps: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'rm_customers__g1') return { n: 1, nModified: 0, upserted: [{ index: 0, _id: 'c1' }], ok: 1 };
      if (command.update === 'read_model_generations' && !command.updates[0].upsert) stamps.push(command.updates[0].u);
      return ensureCollectionReply(command, 'stamps', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'stamps', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    await store.commit('customers', [doc], { generation: 1, position: { commit: 1n, prepare: 1n } });
    await store.recordFailure('customers', 1, { streamId: 'customer-c1', revision: 0, error: 'bad' });
    expect(stamps).toEqual([
      expect.objectContaining({ $currentDate: { updatedAt: true } }),
      { $set: { failure: { streamId: 'customer-c1', revision: 0, error: 'bad' } }, $currentDate: { updatedAt: true } },
    ]);
    expect(stamps[0].$set.updatedAt).toBeUndefined();
  });
});

describe('MongoDB adapter on a replica set: reads that must see a write go to the primary, whatever the URI says', () => {
  it('sends the checkpoint poll and a GET to the primary, with majority read concern, though the URI asks for a secondary and local reads', async () => {
    const reads: { member: string; command: Document }[] = [];
    const model = { _id: 'customers', live: 1, building: null, next: 2 };
    const checkpoint = { _id: 'customers:1', collection: 'customers', generation: 1, commit: '5', prepare: '5', failure: null, updatedAt: new Date() };
    const doc = { _id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: { name: 'Ada' }, match: {} };
    rs = await startScriptedReplicaSet((member, command) => {
      if (command.find) reads.push({ member, command });
      if (command.find === 'read_model_generations') return cursor('rs.read_model_generations', [checkpoint]);
      if (command.find === 'rm_customers__g1') return cursor('rs.rm_customers__g1', [doc]);
      return ensureCollectionReply(command, 'rs', model);
    });
    store = await MongoDbReadStore.connect(`${rs.uri}&readPreference=secondary&readConcernLevel=local`, 'rs', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });

    await expect(store.status('customers')).resolves.toMatchObject({ live: { position: { commit: 5n, prepare: 5n } } });
    await expect(store.get('customers', 'acc', 'c1')).resolves.toMatchObject({ id: 'c1', fields: { name: 'Ada' } });

    expect(reads.map((r) => `${r.member} ${r.command.find}`)).toEqual(
      expect.arrayContaining(['primary read_models', 'primary read_model_generations', 'primary rm_customers__g1']),
    );
    for (const { member, command } of reads) {
      expect(member).toBe('primary');
      expect(command.readConcern).toEqual({ level: 'majority' });
      // For mode primary the driver sends no $readPreference (mongodb 7.9 src/cmap/connection.ts, prepareCommand).
      expect(command.$readPreference).toBeUndefined();
    }
  });
});

describe("MongoDB adapter on a replica set: an erasure's scrub is not retried by the driver", () => {
  it('fails the scrub once, as unavailable, when the primary steps down under it: the eraser, not the driver, tries again', async () => {
    const scrubs: Document[] = [];
    const updateOnes: Document[] = [];
    rs = await startScriptedReplicaSet((member, command) => {
      if (member !== 'primary') return null;
      if (command.update === 'read_models') updateOnes.push(command);
      if (command.listCollections) return cursor('rs.$cmd.listCollections', [{ name: 'rm_customers__g1', type: 'collection' }]);
      if (command.update === 'rm_customers__g1') {
        scrubs.push(command);
        // A primary stepping down answers writes with NotWritablePrimary (10107), a code the driver
        // retries for retryable writes (mongodb 7.9 src/error.ts, RETRYABLE_WRITE_ERROR_CODES): an
        // updateMany is not one (src/operations/update.ts: UpdateManyOperation has no RETRYABLE aspect).
        return { ok: 0, code: 10107, codeName: 'NotWritablePrimary', errmsg: 'not primary' };
      }
      return ensureCollectionReply(command, 'rs', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(rs.uri, 'rs', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    await expect(store.erase('customers', ['c1'])).rejects.toThrow(StoreUnavailableError);
    expect(scrubs).toHaveLength(1);
    expect(scrubs[0].updates[0].multi).toBe(true);
    // A retryable write carries a transaction number, by which the server knows a retry; the scrub has none.
    expect(updateOnes[0].txnNumber).toBeDefined();
    expect(scrubs[0].txnNumber).toBeUndefined();
  });
});

describe('MongoDB adapter: a majority write is bounded below the socket timeout', () => {
  it('asks for wtimeout half of STORE_TIMEOUT_MS and answers a write concern timeout as unavailable, not after the socket times out', async () => {
    const writes: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.update === 'rm_customers__g1') return { n: 1, nModified: 1, ok: 1 };
      if (command.update === 'read_models' && command.updates[0].u.$max) {
        writes.push(command);
        // ok: 1 with a writeConcernError, as a primary answers when the wait for w times out:
        // mongodb/mongo jstests/replsets/maxtime_and_wtimeout.js, code 64 (WriteConcernFailed, later named WriteConcernTimeout).
        return {
          n: 1,
          nModified: 1,
          ok: 1,
          writeConcernError: { code: 64, codeName: 'WriteConcernTimeout', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } },
        };
      }
      return ensureCollectionReply(command, 'wc', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'wc', 4000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const doc = { id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: {} };
    const started = Date.now();
    await expect(store.commit('customers', [doc], { generation: 1, position: { commit: 1n, prepare: 1n } })).rejects.toThrow(StoreUnavailableError);
    expect(Date.now() - started).toBeLessThan(3000); // the server's answer, not the 4 s socket timeout
    expect(writes[0].writeConcern).toEqual({ w: 'majority', j: true, wtimeout: 2000 });
  });
});

/**
 * A promotion and a commit from two processes (two clients) against one endpoint that keeps the
 * `read_models` document and applies to it the updates the adapter sends, matching their filters
 * as the server does for the operators used ($or, $exists, $lte, equality; $set, $max on a string:
 * BSON order, https://www.mongodb.com/docs/manual/reference/operator/update/max/). The generations'
 * checkpoints are fixed: the live one and the rebuild's both at position 5.
 */
describe("MongoDB adapter: a rebuild's promotion racing a commit into the live generation", () => {
  let folder: MongoDbReadStore | undefined;
  afterEach(async () => {
    await folder?.close().catch(() => undefined);
    folder = undefined;
  });

  const at = (n: bigint) => ({ commit: n, prepare: n });
  const checkpoint = (generation: number) => ({
    _id: `customers:${generation}`,
    collection: 'customers',
    generation,
    ...toMongoCheckpoint(at(5n)),
    failure: null,
    updatedAt: new Date(),
  });
  const doc = { id: 'c1', accountId: 'acc', revision: 3, seq: 1, deleted: false, created: 1, fields: {} };

  function matches(filter: Document, d: Document): boolean {
    return Object.entries(filter).every(([field, wanted]) => {
      if (field === '$or') return (wanted as Document[]).some((f) => matches(f, d));
      if (wanted && typeof wanted === 'object' && '$exists' in wanted) return (d[field] !== undefined) === wanted.$exists;
      if (wanted && typeof wanted === 'object' && '$lte' in wanted) return d[field] !== undefined && d[field] <= wanted.$lte;
      return d[field] === wanted;
    });
  }

  /** The endpoint; `hold` keeps the commit's document writes unanswered until it is resolved. */
  async function racing(hold: Promise<void>) {
    const model: Document = { _id: 'customers', live: 1, building: 2, next: 3 };
    const checkpointsWritten: Document[] = [];
    mongo = await startSilentMongo(async (command) => {
      if (command.find === 'read_models') return cursor('race.read_models', [{ ...model }]);
      if (command.find === 'read_model_generations') return cursor('race.read_model_generations', [checkpoint(1), checkpoint(2)]);
      if (command.update === 'read_models') {
        const [{ q, u }] = command.updates;
        if (!matches(q, model)) return { n: 0, nModified: 0, ok: 1 };
        Object.assign(model, u.$set ?? {});
        for (const [field, value] of Object.entries(u.$max ?? {})) if (model[field] === undefined || model[field] < (value as string)) model[field] = value;
        return { n: 1, nModified: 1, ok: 1 };
      }
      if (command.update === 'rm_customers__g1') {
        await hold;
        return { n: 1, nModified: 1, ok: 1 };
      }
      if (command.update === 'read_model_generations') {
        if (command.updates[0].u.$set?.key) checkpointsWritten.push(command.updates[0]);
        return { n: 1, nModified: 1, ok: 1 };
      }
      if (command.createIndexes) return { ok: 1 };
      return null;
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'race', 2000); // the rebuild's process
    folder = await MongoDbReadStore.connect(mongo.uri, 'race', 2000); // the instance that folds
    await store.ensureCollection({ name: 'customers', filters: {} });
    await folder.ensureCollection({ name: 'customers', filters: {} });
    return { model, checkpointsWritten };
  }

  it('refuses a commit whose documents were written as the promotion swapped, before it moves any checkpoint (the projector then folds the batch again into the new generation)', async () => {
    let release!: () => void;
    const { model, checkpointsWritten } = await racing(new Promise<void>((resolve) => (release = resolve)));
    const committing = folder!.commit('customers', [doc], { generation: 1, position: at(6n) });
    committing.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50)); // checked generation 1, writing its documents

    await store!.promote('customers', 2);
    expect(model).toMatchObject({ live: 2, building: null, liveKey: toMongoCheckpoint(at(5n)).key });
    release();

    await expect(committing).rejects.toThrow(GenerationReplacedError);
    expect(checkpointsWritten).toEqual([]); // generation 1's checkpoint never says 6: no follower answers from it
  });

  it('refuses the promotion as behind when a commit moved the live checkpoint just before the swap, and leaves the live generation as it is', async () => {
    const { model } = await racing(Promise.resolve());
    await folder!.commit('customers', [doc], { generation: 1, position: at(6n) });
    expect(model.liveKey).toBe(toMongoCheckpoint(at(6n)).key);

    // The rebuild read both checkpoints at 5 (the stored generations still say so here): only the swap's own filter sees the commit.
    await expect(store!.promote('customers', 2)).rejects.toThrow(RebuildBehindError);
    expect(model).toMatchObject({ live: 1, building: 2 });
  });

  it('reads a GET from the generation the read model names, not one this process saw live before the swap', async () => {
    const reads: string[] = [];
    const model = { _id: 'customers', live: 1, building: null, next: 3 };
    mongo = await startSilentMongo((command) => {
      if (command.find === 'read_models') return cursor('swap.read_models', [{ ...model }]);
      if (typeof command.find === 'string' && command.find.startsWith('rm_customers__g')) {
        reads.push(command.find);
        const fields = { name: command.find === 'rm_customers__g1' ? 'old' : 'new' };
        return cursor(`swap.${command.find}`, [{ _id: 'c1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields, match: {} }]);
      }
      return ensureCollectionReply(command, 'swap', model);
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'swap', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    await expect(store.get('customers', 'acc', 'c1')).resolves.toMatchObject({ fields: { name: 'old' } });
    model.live = 2; // another process promoted generation 2
    await expect(store.get('customers', 'acc', 'c1')).resolves.toMatchObject({ fields: { name: 'new' } });
    await expect(store.get('customers', 'acc', 'c1')).resolves.toMatchObject({ fields: { name: 'new' } });
    expect(reads).toEqual(['rm_customers__g1', 'rm_customers__g1', 'rm_customers__g2', 'rm_customers__g2']);
  });
});

/**
 * A replica set whose primary applied a promotion's swap that a majority does not have yet: the
 * endpoint keeps `read_models` twice, as the primary holds it (what updates match and change, and
 * what a `local` read shows) and as a majority read shows it. A primary answers a majority write
 * whose wait for replication timed out with ok: 1, the write applied, and a writeConcernError 64
 * (mongodb/mongo jstests/replsets/maxtime_and_wtimeout.js; that a write is applied before its write
 * concern is waited for: jstests/replsets/noop_writes_wait_for_write_concern.js), which the driver
 * throws as MongoWriteConcernError without retrying it (mongodb 7.9 src/sdam/server.ts, command:
 * throwIfWriteConcernError; 64 is not in src/error.ts RETRYABLE_WRITE_ERROR_CODES).
 */
describe('MongoDB adapter: a promotion whose swap times out on its write concern', () => {
  function matches(filter: Document, d: Document): boolean {
    return Object.entries(filter).every(([field, wanted]) => {
      if (field === '$or') return (wanted as Document[]).some((f) => matches(f, d));
      if (wanted && typeof wanted === 'object' && '$exists' in wanted) return (d[field] !== undefined) === wanted.$exists;
      if (wanted && typeof wanted === 'object' && '$lte' in wanted) return d[field] !== undefined && d[field] <= wanted.$lte;
      if (wanted && typeof wanted === 'object' && '$ne' in wanted) return d[field] !== wanted.$ne;
      return d[field] === wanted;
    });
  }

  /** The endpoint; `timesOut` says which updates are answered with a write concern timeout (applied on the primary all the same). */
  async function lagging(primary: Document, majority: Document, timesOut: (collection: string, update: Document) => boolean) {
    const sent: string[] = [];
    const timeout = { code: 64, codeName: 'WriteConcernTimeout', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } };
    mongo = await startSilentMongo((command) => {
      if (command.find === 'read_models') {
        sent.push(`find read_models ${command.readConcern?.level}`);
        return cursor('lag.read_models', [{ ...(command.readConcern?.level === 'local' ? primary : majority) }]);
      }
      if (command.find === 'read_model_generations') return cursor('lag.read_model_generations', []);
      if (command.update === 'read_models') {
        const [update] = command.updates;
        if (update.upsert) return { n: 1, nModified: 0, ok: 1 }; // ensureCollection's $setOnInsert, on a document that exists
        if (!matches(update.q, primary)) return { n: 0, nModified: 0, ok: 1 };
        Object.assign(primary, update.u.$set);
        sent.push(`update read_models ${JSON.stringify(update.u.$set)}`);
        return { n: 1, nModified: 1, ok: 1, ...(timesOut('read_models', update) ? { writeConcernError: timeout } : {}) };
      }
      if (command.update === 'read_model_generations') {
        // dropRetired's stamp of retirements promote did not stamp: none here.
        if (command.updates[0].multi) return { n: 0, nModified: 0, ok: 1 };
        if (command.updates[0].u.$unset?.retiredAt !== undefined) sent.push(`unstamp ${command.updates[0].q._id}`);
        return { n: 1, nModified: 1, ok: 1, ...(timesOut('read_model_generations', command.updates[0]) ? { writeConcernError: timeout } : {}) };
      }
      if (command.createIndexes) return { ok: 1 };
      if (command.drop) {
        sent.push(`drop ${command.drop}`);
        return { ok: 1 };
      }
      return ensureCollectionReply({ delete: command.delete }, 'lag', {});
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'lag', 2000);
    await store.ensureCollection(customerProjection.schema);
    return sent;
  }

  /** Rebuilds the customers into an empty event store (promoted at once); the rebuild's outcome. */
  async function rebuild() {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db);
    try {
      return await rebuildProjections([customerProjection], events, store!, { signal: new AbortController().signal, graceMs: 0 });
    } finally {
      await events.close();
      sqlite.dispose();
    }
  }

  it('promotes once a write that changes nothing confirms the swap on a majority; its generation is not dropped', async () => {
    const primary: Document = { _id: 'customers', live: 1, building: null, next: 2 };
    const majority: Document = { ...primary };
    // The claim of generation 2 reached a majority; the swap, and the stamp on the generation it
    // retires, only the primary, until the confirming write (live only) waits for the majority to catch up.
    const sent = await lagging(primary, majority, (collection, update) => {
      if (collection === 'read_model_generations') return update.u.$currentDate?.retiredAt !== undefined;
      const swap = update.u.$set.live !== undefined && update.u.$set.building === null;
      if (!swap) Object.assign(majority, primary);
      return swap;
    });
    await expect(rebuild()).resolves.toEqual([expect.objectContaining({ generation: 2 })]);
    expect(primary).toMatchObject({ live: 2, building: null });
    expect(majority).toMatchObject({ live: 2, building: null });
    // A stamp an earlier promotion that did not take left on the live generation goes before the swap.
    const swap = sent.findIndex((line) => line.startsWith('update read_models {"live":2'));
    expect(sent.indexOf('unstamp customers:1')).toBeGreaterThanOrEqual(0);
    expect(sent.indexOf('unstamp customers:1')).toBeLessThan(swap);
    expect(sent).toContain('find read_models local');
    expect(sent).toContain('update read_models {"live":2}');
    expect(sent).not.toContain('drop rm_customers__g2');
  });

  it('fails as unavailable, not promoted, while no majority confirms the swap the primary applied; its generation is not dropped', async () => {
    const primary: Document = { _id: 'customers', live: 1, building: null, next: 2 };
    const majority: Document = { ...primary };
    // A primary cut off from its secondaries: whatever it applies past the claim times out on its write concern.
    let stamped = false;
    const sent = await lagging(primary, majority, (collection, update) => {
      if (collection === 'read_model_generations' && update.u.$currentDate?.retiredAt !== undefined) stamped = true;
      if (collection === 'read_model_generations') return update.u.$currentDate?.retiredAt !== undefined;
      if (update.u.$set.live === undefined) Object.assign(majority, update.u.$set);
      return update.u.$set.live !== undefined;
    });
    const results = await rebuild().catch((error: unknown) => error);
    expect(results).toBeInstanceOf(StoreUnavailableError);
    expect((results as Error).message).toBe('MongoDB is unreachable: the promotion of customers generation 2 is on the primary, not yet on a majority');
    expect(primary).toMatchObject({ live: 2, building: null });
    expect(majority).toMatchObject({ live: 1, building: 2 });
    // The generation it retires is stamped all the same (rolled back, it is live again, and never dropped as retired).
    expect(stamped).toBe(true);
    // A rollback would bring generation 2 back as building, for the next rebuild to start over.
    expect(sent).not.toContain('drop rm_customers__g2');
  });

  it("tells a swap that matched nothing by the primary's document: replaced by a later rebuild, not behind as a majority read still says", async () => {
    const primary: Document = { _id: 'customers', live: 1, building: 3, next: 4 }; // another rebuild claimed 3
    const majority: Document = { _id: 'customers', live: 1, building: 2, next: 3 };
    await lagging(primary, majority, () => false);
    await expect(store!.promote('customers', 2)).rejects.toThrow(GenerationReplacedError);
    expect(primary).toMatchObject({ live: 1, building: 3 });
  });

  it('abandons a rebuild only if the primary still has it building: never one its swap made live, though a majority read still shows it building', async () => {
    const primary: Document = { _id: 'customers', live: 2, building: null, next: 3 };
    const majority: Document = { _id: 'customers', live: 1, building: 2, next: 3 };
    const sent = await lagging(primary, majority, () => false);

    await store!.abandonRebuild('customers', 2);
    expect(primary).toMatchObject({ live: 2, building: null });
    expect(sent.filter((s) => s.startsWith('drop'))).toEqual([]);

    // One still building is unclaimed first, then dropped.
    Object.assign(primary, { building: 3, next: 4 });
    sent.length = 0;
    await store!.abandonRebuild('customers', 3);
    expect(sent).toEqual(['update read_models {"building":null}', 'drop rm_customers__g3']);
    expect(primary).toMatchObject({ live: 2, building: null });
  });
});

describe('MongoDB key store: a key another writer made, not yet on a majority', () => {
  let keys: MongoDbKeyStore | undefined;
  afterEach(async () => {
    await keys?.close().catch(() => undefined);
    keys = undefined;
  });

  it('answers a duplicate whose wait for a majority timed out as unavailable, and takes the key a majority has once the wait succeeds', async () => {
    // Another writer's insert of the key is on the primary, not yet on a majority. With w: majority
    // the primary refuses this insert (E11000, a write error in an ok: 1 reply) and still waits for
    // the write concern, at its latest write, theirs included: jstests/replsets/lastop.js (a
    // DuplicateKey's lastOp is the other connection's write), noop_writes_wait_for_write_concern.js
    // (insert: writeErrors[0].code DuplicateKey and a writeConcernError when the wait times out).
    const key = Buffer.alloc(32, 9);
    let majorityHasIt = false;
    let waitTimesOut = true;
    const sent: string[] = [];
    const finds: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.insert === 'data_keys') {
        sent.push('insert');
        const { _id } = command.documents[0];
        const duplicate = {
          index: 0,
          code: 11000,
          errmsg: `E11000 duplicate key error collection: keys.data_keys index: _id_ dup key: { _id: "${_id}" }`,
          keyPattern: { _id: 1 },
          keyValue: { _id },
        };
        if (waitTimesOut) {
          const timeout = { code: 64, codeName: 'WriteConcernTimeout', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } };
          return { n: 0, ok: 1, writeErrors: [duplicate], writeConcernError: timeout };
        }
        majorityHasIt = true; // the answer comes once the wait is over: their insert is on a majority
        return { n: 0, ok: 1, writeErrors: [duplicate] };
      }
      if (command.find === 'data_keys') {
        sent.push('find');
        finds.push(command);
        return cursor('keys.data_keys', majorityHasIt ? [{ _id: 'customer-1', key: new Binary(key) }] : []);
      }
      return null;
    });
    keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);

    // The driver throws the write concern error, not the duplicate (mongodb 7.9 src/sdam/server.ts,
    // command: throwIfWriteConcernError before the insert's handleOk): unavailable, nothing read after.
    await expect(keys.obtain('customer-1')).rejects.toThrow(StoreUnavailableError);
    expect(sent).toEqual(['find', 'insert']);
    waitTimesOut = false;
    await expect(keys.obtain('customer-1')).resolves.toEqual(key);
    expect(sent).toEqual(['find', 'insert', 'find', 'insert', 'find']);
    for (const find of finds) expect(find.readConcern).toEqual({ level: 'majority' });
  });

  it('answers a duplicate whose key a majority read does not show as unavailable, not a TypeError (no answer a primary gives with w: majority: the handling is defensive)', async () => {
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.insert === 'data_keys')
        return {
          n: 0,
          ok: 1,
          writeErrors: [{ index: 0, code: 11000, errmsg: 'E11000 duplicate key error', keyPattern: { _id: 1 }, keyValue: { _id: 'customer-1' } }],
        };
      if (command.find === 'data_keys') return cursor('keys.data_keys', []);
      return null;
    });
    keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);
    await expect(keys.obtain('customer-1')).rejects.toThrow(StoreUnavailableError);
  });

  it('leaves a record created on another instance unread (unavailable) until its key shows, then opens it: never blank', async () => {
    const stored = new Map<string, Document>();
    let lagging = true;
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.insert === 'data_keys') {
        for (const d of command.documents) stored.set(d._id, d);
        return { n: command.documents.length, ok: 1 };
      }
      // The reading instance's majority read, before and after the key reached it.
      if (command.find === 'data_keys') return cursor('keys.data_keys', lagging ? [] : command.filter._id.$in.map((id: string) => stored.get(id)));
      return null;
    });
    keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db);
    try {
      const writer = new SealedEventStore(events, new DataKeys(keys), RECORD_KINDS);
      const reader = new SealedEventStore(events, new DataKeys(keys), RECORD_KINDS);
      const metadata = { accountId: 'acc', correlationId: 'r', causationId: 'c', schemaVersion: 2 };
      await writer.appendToStream('customer-3', [{ id: randomUUID(), type: 'CustomerCreated', data: { name: 'Ada' }, metadata }], 'no_stream');

      await expect(reader.readStream('customer-3')).rejects.toThrow(StoreUnavailableError);
      lagging = false;
      expect((await reader.readStream('customer-3'))[0].data).toEqual({ name: 'Ada' });
    } finally {
      await events.close();
      sqlite.dispose();
    }
  });

  it("makes a new record's key with one majority-acknowledged insert and hands out the key it inserted", async () => {
    const inserts: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.insert === 'data_keys') {
        inserts.push(command);
        return { n: 1, ok: 1 };
      }
      return null;
    });
    keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);
    const key = await keys.obtain('customer-2', { isNew: true });
    expect(Buffer.from(inserts[0].documents[0].key.buffer)).toEqual(key);
    expect(inserts[0].writeConcern).toEqual({ w: 'majority', j: true, wtimeout: 1000 });
    expect(mongo.unanswered).toEqual([]); // no read after the insert
  });
});

describe('MongoDB key store: a destroy racing the making of the same key', () => {
  it("destroys the key another writer inserted between its upsert's query and its insert, rather than taking the duplicate for an erasure", async () => {
    // The upsert's filter is not equalities alone ($exists), so the server does not retry its
    // duplicate (mongodb/mongo src/mongo/db/ops/write_ops_exec.cpp, shouldRetryDuplicateKeyException).
    const updates: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.update !== 'data_keys') return null;
      updates.push(command.updates[0]);
      if (command.updates[0].upsert) {
        const duplicate = { index: 0, code: 11000, errmsg: 'E11000 duplicate key error', keyPattern: { _id: 1 }, keyValue: { _id: 'customer-1' } };
        return { n: 0, nModified: 0, ok: 1, writeErrors: [duplicate] };
      }
      return { n: 1, nModified: 1, ok: 1 };
    });
    const keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);
    try {
      await keys.destroy('customer-1', 'acc-1');
    } finally {
      await keys.close();
    }
    expect(updates.map((u) => [u.q, u.upsert === true, Object.keys(u.u.$set)])).toEqual([
      [{ _id: 'customer-1', erasedAt: { $exists: false } }, true, ['key', 'erasedBy', 'erasedAt', 'pending']],
      [{ _id: 'customer-1', erasedAt: { $exists: false } }, false, ['key', 'erasedBy', 'erasedAt', 'pending']],
    ]);
  });
});

describe("MongoDB key store: a restore's erasure made pending again", () => {
  it('sends the account as a literal, which the pipeline update would otherwise read as a field path or variable when it starts with $', async () => {
    // mongodb/mongo src/mongo/db/pipeline/expression.cpp, Expression::parseOperand: a string operand
    // starting with $ is an ExpressionFieldPath ($$x a variable: an undefined one fails the update).
    const updates: Document[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.createIndexes) return { ok: 1 };
      if (command.update === 'data_keys') return (updates.push(...command.updates), { n: 1, nModified: 1, ok: 1 });
      return null;
    });
    const keys = await MongoDbKeyStore.connect(mongo.uri, 'keys', 2000);
    try {
      await keys.reopenErasure('customer-1', '$$restore');
    } finally {
      await keys.close();
    }
    expect(updates).toEqual([
      expect.objectContaining({
        q: { _id: 'customer-1', key: null },
        u: [{ $set: { pending: true, erasedBy: { $ifNull: ['$erasedBy', { $literal: '$$restore' }] } } }],
      }),
    ]);
  });
});

describe('MongoDB adapter: a settlement refused writes nothing', () => {
  const seen: ParkedStream = {
    streamId: 'customer-f',
    first: { revision: 0, position: { commit: 1n, prepare: 1n }, type: 'Mystery', error: 'Unknown event type Mystery' },
    parkedAt: 1,
    waiting: 0,
    lastRevision: 0,
    request: { action: 'skip', by: 'ops', at: 1_700_000_000_000, reason: 'bad import' },
  };
  const skip = { ...seen.first, streamId: 'customer-f', by: 'ops', at: 1_700_000_000_001, reason: 'bad import' };
  const doc = { id: 'c1', accountId: 'acc', revision: 1, seq: 1, deleted: false, created: 1, fields: {} };
  const CHECK = `check ${JSON.stringify({ _id: { $in: ['customers:1/customer-f'] } })}`;

  /** What a settlement's commit sends (the check of the stream, then the writes), the stream's last parked revision in the store being `stored`, and how the commit ends. */
  async function settle(stored: number): Promise<{ writes: string[]; outcome: Promise<void> }> {
    const writes: string[] = [];
    mongo = await startSilentMongo((command) => {
      if (command.find === 'read_model_parked') {
        writes.push(`check ${JSON.stringify(command.filter)}`);
        return cursor('settle.read_model_parked', [{ _id: 'customers:1/customer-f', lastRevision: stored }]);
      }
      if (command.update === 'rm_customers__g1') return (writes.push('documents'), { n: 1, nModified: 0, upserted: [{ index: 0, _id: 'c1' }], ok: 1 });
      if (command.insert === 'read_model_skipped') return (writes.push('skip'), { n: 1, ok: 1 });
      if (command.delete === 'read_model_parked') return (writes.push('settlement'), { n: stored === seen.lastRevision ? 1 : 0, ok: 1 });
      return ensureCollectionReply(command, 'settle', { _id: 'customers', live: 1, building: null, next: 2 });
    });
    store = await MongoDbReadStore.connect(mongo.uri, 'settle', 2000);
    await store.ensureCollection({ name: 'customers', filters: {} });
    const outcome = store.commit(
      'customers',
      [doc],
      { generation: 1, position: { commit: 1n, prepare: 1n } },
      {
        settled: [{ streamId: 'customer-f', now: null, seen }],
        skipped: [skip],
      },
    );
    await outcome.catch(() => undefined);
    return { writes, outcome };
  }

  it('refuses a stream parked further since the settlement read it before writing its documents or its skip', async () => {
    // Another folder (this one's lease lost) parked a later event of the stream meanwhile.
    const { writes, outcome } = await settle(1);
    await expect(outcome).rejects.toBeInstanceOf(ParkedStreamMovedError);
    expect(writes).toEqual([CHECK]);
  });

  it('writes the documents, then the skip, then the settlement of a stream as it was read', async () => {
    const { writes, outcome } = await settle(0);
    await expect(outcome).resolves.toBeUndefined();
    expect(writes).toEqual([CHECK, 'documents', 'skip', 'settlement']);
  });
});

describe('MongoDB adapter: substring filters read the substring index, where the generation has one', () => {
  /** The find and count commands a substring list sends, with the generation's record as given. */
  async function listCommands(generation: Document): Promise<{ find: Document; count: Document }> {
    const sent: Document[] = [];
    const model = { _id: 'customers', live: 1, building: null, next: 2 };
    rs = await startScriptedReplicaSet((_member, command) => {
      if (command.find === 'read_model_generations') return cursor('rs.read_model_generations', [generation]);
      if (command.find === 'rm_customers__g1') return (sent.push(command), cursor('rs.rm_customers__g1', []));
      if (command.aggregate === 'rm_customers__g1') return (sent.push(command), cursor('rs.rm_customers__g1', [{ _id: 1, n: 0 }]));
      return ensureCollectionReply(command, 'rs', model);
    });
    store = await MongoDbReadStore.connect(rs.uri, 'rs', 2000);
    await store.ensureCollection({ name: 'customers', filters: { email: 'exact-ci', company: 'contains-ci' } });
    await expect(store.find('customers', { accountId: 'acc', filters: { company: 'Acme' }, order: 'newest', offset: 0, limit: 10 })).resolves.toEqual({
      documents: [],
      total: 0,
      capped: false,
    });
    return { find: sent.find((c) => c.find)!, count: sent.find((c) => c.aggregate)! };
  }

  it('asks for every token of the substring on the substring index, and counts up to COUNT_LIMIT + 1 the same way', async () => {
    const { find, count } = await listCommands({
      _id: 'customers:1',
      collection: 'customers',
      generation: 1,
      failure: null,
      updatedAt: new Date(),
      substrings: true,
    });
    const tokens = substringQuery('acc', 0, 'acme').split(' ');
    expect(find).toMatchObject({
      filter: { accountId: 'acc', deleted: false, 'match.company': { $regex: 'acme' }, substrings: { $all: tokens } },
      hint: 'live_by_substrings',
      sort: { seq: -1 },
    });
    expect(count).toMatchObject({ hint: 'live_by_substrings' });
    expect(count.pipeline).toEqual(expect.arrayContaining([{ $match: expect.objectContaining({ substrings: { $all: tokens } }) }, { $limit: 10_001 }]));
  });

  it("bounds a list's find and count on the server below the socket's timeout, so the server's own error comes first", async () => {
    // Equal to it, the socket's timer (started as the command is sent) fired first: the driver
    // closed the connection and sent the query again, doubling the wait.
    const { find, count } = await listCommands({ _id: 'customers:1', collection: 'customers', generation: 1, failure: null, updatedAt: new Date() });
    expect(find.maxTimeMS).toBe(1600);
    expect(count.maxTimeMS).toBe(1600);
  });

  it('matches by $regex alone in a generation made before the index (an upgraded store, until a rebuild)', async () => {
    const { find, count } = await listCommands({ _id: 'customers:1', collection: 'customers', generation: 1, failure: null, updatedAt: new Date() });
    expect(find.filter).toEqual({ accountId: 'acc', deleted: false, 'match.company': { $regex: 'acme' } });
    expect(find.hint).toBeUndefined();
    expect(count.hint).toBeUndefined();
  });
});
