import { Binary, Collection, MongoClient } from 'mongodb';
import { connectMongoClient, isDuplicateKey, translateMongoError } from '../storage/mongodb-client';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import { randomBytesPooled } from './random-bytes';
import { KEY_BYTES, type KeyStore, type PendingErasure } from './key-store.port';

interface MongoDataKey {
  /** The key id: the record's stream id. */
  _id: string;
  key: Binary | null;
  erasedBy?: string;
  erasedAt?: Date;
  /** Set while an erasure is unfinished; absent otherwise (the index is sparse). */
  pending?: true;
}

export const DATA_KEYS_COLLECTION = 'data_keys';

/**
 * Data keys in MongoDB, in the read models' database but never in the event store: the events and
 * their keys are apart, so a copy of the events alone (an EventStoreDB backup) holds no readable
 * value. Writes are acknowledged by a majority and journaled (the client's write concern), so a
 * key exists on disk before any event sealed with it. A destroyed key's document keeps no key;
 * what MongoDB keeps beyond the service's reach (the oplog window, backups) is in docs/operators.md.
 */
export class MongoDbKeyStore implements KeyStore {
  readonly name = 'MongoDB';

  constructor(
    private readonly client: MongoClient,
    private readonly keys: Collection<MongoDataKey>,
  ) {}

  static async connect(uri: string, database: string, timeoutMs: number): Promise<MongoDbKeyStore> {
    const client = await connectMongoClient(uri, timeoutMs);
    try {
      const keys = client.db(database).collection<MongoDataKey>(DATA_KEYS_COLLECTION);
      await keys.createIndex({ pending: 1 }, { name: 'pending', sparse: true });
      return new MongoDbKeyStore(client, keys);
    } catch (error) {
      await client.close().catch(() => undefined);
      throw translateMongoError(error);
    }
  }

  async obtain(keyId: string, { isNew = false } = {}): Promise<Buffer | null> {
    return this.guard(async () => {
      const found = isNew ? null : await this.keys.findOne({ _id: keyId });
      if (found) return bufferOf(found.key);
      const key = randomBytesPooled(KEY_BYTES);
      try {
        await this.keys.insertOne({ _id: keyId, key: new Binary(key) });
        return key;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      // Made (or destroyed) by a racing writer: take theirs. With w: majority the primary answers the
      // duplicate only once its write concern is met at the primary's latest write, theirs included
      // (mongodb/mongo jstests/replsets/lastop.js, noop_writes_wait_for_write_concern.js), so a
      // majority read shows it. Had that wait timed out, the reply carried a write concern error
      // beside the duplicate, which the driver throws instead (code 64: unavailable, above). Not
      // shown all the same, it is no answer to read as erased: unavailable, to retry.
      const theirs = await this.keys.findOne({ _id: keyId });
      if (!theirs) throw new StoreUnavailableError('MongoDB', `the data key of ${keyId}, made by another writer, is not found by a majority read`);
      return bufferOf(theirs.key);
    });
  }

  async getMany(keyIds: string[]): Promise<Map<string, Buffer | null>> {
    const found = new Map<string, Buffer | null>();
    if (keyIds.length === 0) return found;
    const docs = await this.guard(() => this.keys.find({ _id: { $in: keyIds } }).toArray());
    for (const d of docs) found.set(d._id, bufferOf(d.key));
    return found;
  }

  async destroyedAmong(keyIds: string[]): Promise<Set<string>> {
    if (keyIds.length === 0) return new Set();
    const docs = await this.guard(() => this.keys.find({ _id: { $in: keyIds }, key: null }, { projection: { _id: 1 } }).toArray());
    return new Set(docs.map((d) => d._id));
  }

  async destroy(keyId: string, erasedBy: string): Promise<void> {
    const erase = (upsert: boolean) =>
      this.guard(() =>
        this.keys.updateOne({ _id: keyId, erasedAt: { $exists: false } }, { $set: { key: null, erasedBy, erasedAt: new Date(), pending: true } }, { upsert }),
      );
    await erase(true).catch(async (error: unknown) => {
      if (!isDuplicateKey(error)) throw error;
      // The upsert found no unerased key, and its insert met a document: erased already, or a key
      // another writer made in between (the server retries no upsert whose filter is not equalities
      // alone: mongodb/mongo src/mongo/db/ops/write_ops_exec.cpp, shouldRetryDuplicateKeyException),
      // which this destroys.
      await erase(false);
    });
  }

  async pendingErasures(prefix: string): Promise<PendingErasure[]> {
    const docs = await this.guard(() => this.keys.find({ pending: true }).toArray());
    return docs.filter((d) => d._id.startsWith(prefix)).map((d) => ({ keyId: d._id, erasedBy: d.erasedBy ?? '' }));
  }

  async finishErasure(keyId: string): Promise<void> {
    await this.guard(() => this.keys.updateOne({ _id: keyId }, { $unset: { pending: '' } }));
  }

  async reopenErasure(keyId: string, erasedBy: string): Promise<void> {
    // $literal: in a pipeline an account starting with $ would be read as a field path or variable.
    const update = [{ $set: { pending: true, erasedBy: { $ifNull: ['$erasedBy', { $literal: erasedBy }] } } }];
    await this.guard(() => this.keys.updateOne({ _id: keyId, key: null }, update));
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw translateMongoError(error);
    }
  }
}

const bufferOf = (key: Binary | null) => (key ? Buffer.from(key.buffer) : null);
