import { AnyBulkWriteOperation, Collection, Db, MongoClient } from 'mongodb';
import type { Position } from '../event-store/event-store.port';
import { ConfigError } from '../config/config';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import {
  CHECKPOINTS_COLLECTION,
  checkFieldNames,
  duplicateKeyFailures,
  findFilter,
  fromMongoCheckpoint,
  fromMongoDocument,
  indexesFor,
  isDuplicateKey,
  MongoCheckpoint,
  MongoReadDocument,
  readModelCollection,
  toMongoCheckpoint,
  toMongoDocument,
  translateMongoError,
} from './mongodb-mapping';
import type { Checkpoint, CollectionSchema, FindQuery, FindResult, ReadDocument, ReadStore } from './read-store.port';

/**
 * Read store on MongoDB (driver 7). A collection per read model with partial indexes over live
 * documents in creation order; upserts guarded by revision; checkpoints in their own collection,
 * moved only forward. A standalone server has no multi-document transactions, so a commit writes
 * the documents first and the checkpoint last: after a crash in between, the projector refolds the
 * batch from the older checkpoint and the revision guard makes the replay change nothing.
 */
export class MongoDbReadStore implements ReadStore {
  private readonly schemas = new Map<string, CollectionSchema>();
  private readonly checkpoints: Collection<MongoCheckpoint>;

  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {
    this.checkpoints = db.collection<MongoCheckpoint>(CHECKPOINTS_COLLECTION);
  }

  /**
   * Connects within `timeoutMs` (which also bounds how long any later call waits for a missing
   * server), so a wrong or unreachable server stops the start with a clear error.
   */
  static async connect(uri: string, database: string, timeoutMs: number): Promise<MongoDbReadStore> {
    let client: MongoClient;
    try {
      client = new MongoClient(uri, { serverSelectionTimeoutMS: timeoutMs, appName: 'profiles-customers-service' });
    } catch (error) {
      throw new ConfigError(`MONGODB_URI cannot be parsed: ${(error as Error).message}`);
    }
    try {
      await client.connect();
    } catch (error) {
      await client.close().catch(() => undefined);
      const translated = translateMongoError(error);
      throw translated instanceof StoreUnavailableError ? translated : new StoreUnavailableError('MongoDB', (error as Error).message);
    }
    return new MongoDbReadStore(client, client.db(database));
  }

  async ensureCollection(schema: CollectionSchema): Promise<void> {
    checkFieldNames(schema);
    // createIndexes creates the collection too, and is a no-op for indexes that already exist as specified.
    await this.guard(() => this.collection(schema.name).createIndexes(indexesFor(schema)));
    this.schemas.set(schema.name, schema);
  }

  async getMany(collection: string, ids: string[]): Promise<Map<string, ReadDocument>> {
    this.schema(collection);
    const found = new Map<string, ReadDocument>();
    if (ids.length === 0) return found;
    const docs = await this.guard(() => this.collection(collection).find({ _id: { $in: ids } }).toArray());
    for (const d of docs) found.set(d._id, fromMongoDocument(d));
    return found;
  }

  async get(collection: string, accountId: string, id: string): Promise<ReadDocument | null> {
    this.schema(collection);
    const d = await this.guard(() => this.collection(collection).findOne({ _id: id, accountId, deleted: false }));
    return d ? fromMongoDocument(d) : null;
  }

  async find(collection: string, query: FindQuery): Promise<FindResult> {
    const filter = findFilter(collection, this.schema(collection), query);
    const c = this.collection(collection);
    const [docs, total] = await this.guard(() =>
      Promise.all([
        c.find(filter).sort({ seq: query.order === 'newest' ? -1 : 1 }).skip(query.offset).limit(query.limit).toArray(),
        c.countDocuments(filter),
      ]),
    );
    return { documents: docs.map(fromMongoDocument), total };
  }

  async commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint): Promise<void> {
    const schema = this.schema(collection);
    const operations: AnyBulkWriteOperation<MongoReadDocument>[] = documents.map((d) => {
      const { _id, ...replacement } = toMongoDocument(schema, d);
      // Replaces only an older revision; when the guard fails on an existing document, the upsert
      // tries to insert its _id and fails as a duplicate: that document is already as new or newer.
      return { replaceOne: { filter: { _id, revision: { $lt: d.revision } }, replacement, upsert: true } };
    });
    await this.guard(() => this.writeGuarded(collection, operations));
    await this.guard(() => this.saveCheckpoint(checkpoint.projection, checkpoint.position));
  }

  async getCheckpoint(projection: string): Promise<Position | null> {
    const c = await this.guard(() => this.checkpoints.findOne({ _id: projection }));
    return c ? fromMongoCheckpoint(c) : null;
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /**
   * Runs guarded upserts, then once more those that failed as duplicates: two writers inserting
   * the same new document race, and the loser's retry now meets the winner's document and its
   * guard. A duplicate on the retry means the stored revision is as new or newer.
   */
  private async writeGuarded(collection: string, operations: AnyBulkWriteOperation<MongoReadDocument>[]): Promise<void> {
    if (operations.length === 0) return;
    const c = this.collection(collection);
    let pending = operations;
    for (let attempt = 1; attempt <= 2 && pending.length > 0; attempt++) {
      try {
        await c.bulkWrite(pending, { ordered: false });
        return;
      } catch (error) {
        const duplicates = duplicateKeyFailures(error);
        if (!duplicates) throw error;
        pending = duplicates.map((i) => pending[i]);
      }
    }
  }

  /** Compare-and-set: the checkpoint only moves forward, whatever order writers arrive in. */
  private async saveCheckpoint(projection: string, position: Position): Promise<void> {
    const next = toMongoCheckpoint(position);
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        await this.checkpoints.updateOne({ _id: projection, key: { $lt: next.key } }, { $set: next }, { upsert: true });
        return;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
  }

  private collection(name: string): Collection<MongoReadDocument> {
    return this.db.collection<MongoReadDocument>(readModelCollection(name));
  }

  private schema(name: string): CollectionSchema {
    const schema = this.schemas.get(name);
    if (!schema) throw new Error(`Unknown collection ${name}: call ensureCollection first`);
    return schema;
  }

  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw translateMongoError(error);
    }
  }
}
