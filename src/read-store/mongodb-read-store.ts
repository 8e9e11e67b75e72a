import { Collection, Db, MongoClient } from 'mongodb';
import { START } from '../event-store/event-store.port';
import { assertPromotable, assertWritable, generationSchema } from './generation-rules';
import { dropCollection, ignoreDuplicate, scrub, writeNewer } from './mongodb-writes';
import {
  checkFieldNames,
  findPage,
  fromMongoCheckpoint,
  fromMongoDocument,
  generationId,
  GENERATIONS_COLLECTION,
  indexesFor,
  LEASES_COLLECTION,
  Built,
  keptSchema,
  MongoGeneration,
  MongoLease,
  MongoReadDocument,
  MongoReadModel,
  positionKey,
  READ_MODELS_COLLECTION,
  readModelCollection,
  readModelCollections,
  toMongoCheckpoint,
} from './mongodb-mapping';
import { connectMongoClient, translateMongoError } from '../storage/mongodb-client';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import { readsSubstrings } from './substrings';
import {
  Checkpoint,
  CollectionSchema,
  CollectionStatus,
  COUNT_LIMIT,
  FindQuery,
  FindResult,
  FilterNotBuiltError,
  GenerationReplacedError,
  GenerationStatus,
  ParkedChanges,
  ParkedStream,
  ParkRequest,
  ProjectionFailure,
  ReadDocument,
  ReadStore,
  RebuildBehindError,
  SkippedEvent,
} from './read-store.port';
import { MongoDbReadLeases } from './mongodb-read-leases';
import { MongoDbParked } from './mongodb-parked';

/**
 * Read store on MongoDB (driver 7). Each read model's generations are collections of their own
 * (`rm_<model>__g<n>`) with partial indexes over live documents in creation order; one document
 * per read model in `read_models` says which generation is live and which one a rebuild fills, so
 * a promotion is a single atomic update. Upserts are guarded by revision; each generation's
 * checkpoint and failure live in `read_model_generations`, the checkpoint moved only forward. A
 * standalone server has no multi-document transactions, so a commit writes the documents first
 * and the checkpoint last: after a crash in between, the projector refolds the batch from the
 * older checkpoint and the revision guard makes the replay change nothing. A commit into the live
 * generation also moves `liveKey` in `read_models`, on condition that the generation is still live,
 * and a promotion swaps on condition that `liveKey` is not past the rebuild's checkpoint: of a
 * commit and a promotion racing, either the promotion is refused as behind, or the commit as
 * replaced, before its waiters are answered, and it is folded again into the new generation.
 */
export class MongoDbReadStore implements ReadStore {
  private readonly schemas = new Map<string, CollectionSchema>();
  private readonly readModels: Collection<MongoReadModel>;
  private readonly generations: Collection<MongoGeneration>;
  private readonly leases: MongoDbReadLeases;
  private readonly parkedStreams: MongoDbParked;
  /** The live generation last seen, by read model: what a read tries first (see readLive). */
  private readonly lastLive = new Map<string, number>();
  /** Per generation (its id), how it was built (see built). */
  private readonly builtBy = new Map<string, Built>();

  /**
   * @param timeoutMs the store's timeout (the socket's): a list's queries, the only ones whose cost
   *   grows with the account, carry four fifths of it as maxTimeMS, so that the server's own error
   *   (MaxTimeMSExpired, a 503) comes before the socket times out, closes the connection and the
   *   driver sends the query again
   */
  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly timeoutMs: number,
  ) {
    this.readModels = db.collection<MongoReadModel>(READ_MODELS_COLLECTION);
    this.generations = db.collection<MongoGeneration>(GENERATIONS_COLLECTION);
    this.parkedStreams = new MongoDbParked(db);
    this.leases = new MongoDbReadLeases(db.collection<MongoLease>(LEASES_COLLECTION), (operation) => this.guard(operation));
  }

  /** Connects within `timeoutMs` (see connectMongoClient). */
  static async connect(uri: string, database: string, timeoutMs: number): Promise<MongoDbReadStore> {
    const client = await connectMongoClient(uri, timeoutMs);
    return new MongoDbReadStore(client, client.db(database), timeoutMs);
  }

  async ensureCollection(schema: CollectionSchema): Promise<void> {
    checkFieldNames(schema);
    readModelCollection(schema.name, 1);
    await this.guard(async () => {
      await ignoreDuplicate(() => this.readModels.updateOne({ _id: schema.name }, { $setOnInsert: { live: 1, building: null, next: 2 } }, { upsert: true }));
      await ignoreDuplicate(() =>
        this.generations.updateOne(
          { _id: generationId(schema.name, 1) },
          { $setOnInsert: { collection: schema.name, generation: 1, failure: null, updatedAt: new Date(), substrings: true, ...keptSchema(schema) } },
          { upsert: true },
        ),
      );
      const { live } = await this.readModel(schema.name);
      this.lastLive.set(schema.name, live);
      this.schemas.set(schema.name, schema);
      const built = await this.built(schema.name, live);
      // A live generation made before generations kept their schema is taken as built with this one.
      // Another instance (another version) may stamp it first: what it holds then is read again.
      if (!built.kept) {
        await this.generations.updateOne({ _id: generationId(schema.name, live), fingerprint: { $exists: false } }, { $set: keptSchema(schema) });
        this.builtBy.delete(generationId(schema.name, live));
        await this.built(schema.name, live);
      }
      // createIndexes creates the collection too, and is a no-op for indexes that already exist as
      // specified: those of the schema the generation was built with. A generation made before the
      // substring index came gets none: its documents carry no tokens, its finds match by $regex,
      // and building one at start would index every document for nothing, past the store's timeout
      // on a large model.
      await this.collection(schema.name, live).createIndexes(indexesFor(built.schema, built));
      await this.parkedStreams.ensureIndexes();
    });
  }

  async getMany(collection: string, ids: string[], generation?: number): Promise<Map<string, ReadDocument>> {
    this.schema(collection);
    const found = new Map<string, ReadDocument>();
    if (ids.length === 0) return found;
    const byIds = (g: number) => this.collection(collection, g).find({ _id: { $in: ids } });
    const read = (g: number) => byIds(g).toArray();
    if (generation !== undefined) await this.assertWritable(collection, generation);
    const docs = generation === undefined ? await this.readLive(collection, read) : await this.guard(() => read(generation));
    for (const d of docs) found.set(d._id, fromMongoDocument(d));
    return found;
  }

  async get(collection: string, accountId: string, id: string): Promise<ReadDocument | null> {
    this.schema(collection);
    const d = await this.readLive(collection, (g) => this.collection(collection, g).findOne({ _id: id, accountId, deleted: false }));
    return d ? fromMongoDocument(d) : null;
  }

  async pageById(collection: string, after: string, limit: number): Promise<ReadDocument[]> {
    this.schema(collection);
    const page = (g: number) => this.collection(collection, g).find({ _id: { $gt: after } }, { sort: { _id: 1 }, limit });
    return (await this.readLive(collection, (g) => page(g).toArray())).map(fromMongoDocument);
  }

  async oldest(collection: string, accountId: string): Promise<ReadDocument | null> {
    this.schema(collection);
    const d = await this.readLive(collection, (g) => this.collection(collection, g).findOne({ accountId, deleted: false }, { sort: { seq: 1 } }));
    return d ? fromMongoDocument(d) : null;
  }

  async find(collection: string, query: FindQuery): Promise<FindResult> {
    const current = this.schema(collection);
    const found = await this.readLive(collection, async (g) => {
      const built = await this.built(collection, g);
      const { schema } = built;
      // A filter the generation lacks: none found, should it still be the live one (else the read is made again in the live one).
      const lacking = Object.keys(query.filters).find((f) => !schema.filters[f] && current.filters[f]);
      if (lacking) return lacking;
      // Substring filters alone read the substring index, where the generation has one (see indexesFor).
      const substrings = readsSubstrings(schema, Object.keys(query.filters)) && built.substrings;
      return findPage(this.collection(collection, g), collection, schema, query, { substrings, maxTimeMS: Math.max(1, Math.floor(this.timeoutMs * 0.8)) });
    });
    if (typeof found === 'string') throw new FilterNotBuiltError('MongoDB', collection, found);
    const [docs, total] = found;
    return { documents: docs.map(fromMongoDocument), total: Math.min(total, COUNT_LIMIT), capped: total > COUNT_LIMIT };
  }

  /**
   * How the generation was built: whether its documents carry substring tokens (those made before
   * the index came, an upgraded store's live one until a rebuild, match substrings by $regex alone),
   * and with which schema (one made before generations kept it: the code's). Never changes.
   */
  private async built(collection: string, generation: number): Promise<Built> {
    const id = generationId(collection, generation);
    let known = this.builtBy.get(id);
    if (known === undefined) {
      const record = await this.guard(() => this.generations.findOne({ _id: id }, { projection: { substrings: 1, filters: 1 } }));
      known = {
        substrings: record?.substrings === true,
        schema: generationSchema(this.schema(collection), record?.filters),
        kept: record?.filters !== undefined,
      };
      this.builtBy.set(id, known);
    }
    return known;
  }

  async commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint, parked?: ParkedChanges): Promise<void> {
    const { generation, position } = checkpoint;
    const { live } = await this.assertWritable(collection, generation);
    // As the generation was built: its `match` holds its own filters.
    const { schema } = await this.built(collection, generation);
    // A settlement refused writes nothing, its documents included (see MongoDbParked.refuseMoved).
    if (parked?.settled) await this.guard(() => this.parkedStreams.refuseMoved(collection, generation, parked.settled!));
    await this.guard(() => writeNewer(this.collection(collection, generation), schema, documents));
    // Parked after the documents and before the checkpoint (see MongoDbParked): each step replays.
    if (parked) await this.guard(() => this.parkedStreams.apply(collection, generation, parked));
    const next = toMongoCheckpoint(position);
    if (generation === live) await this.moveLiveKey(collection, generation, next.key);
    else await this.refuseIfDropped(collection, generation);
    // Compare-and-set: the checkpoint only moves forward, whatever order writers arrive in.
    const _id = generationId(collection, generation);
    await this.guard(async () => {
      const moved = await this.generations.updateOne(
        { _id, $or: [{ key: { $exists: false } }, { key: { $lt: next.key } }] },
        { $set: { ...next, failure: null }, $currentDate: { updatedAt: true } },
      );
      if (moved.matchedCount === 0) await this.generations.updateOne({ _id }, { $set: { failure: null }, $currentDate: { updatedAt: true } });
    });
  }

  async recordFailure(collection: string, generation: number, failure: ProjectionFailure): Promise<void> {
    await this.guard(() => this.generations.updateOne({ _id: generationId(collection, generation) }, { $set: { failure }, $currentDate: { updatedAt: true } }));
  }

  parked(collection: string, generation: number, limit?: number): Promise<ParkedStream[]> {
    return this.guard(() => this.parkedStreams.list(collection, generation, limit));
  }

  parkedCount(collection: string, generation: number): Promise<{ streams: number; events: number }> {
    return this.guard(() => this.parkedStreams.count(collection, generation));
  }

  requestParked(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): Promise<string[]> {
    return this.guard(() => this.parkedStreams.request(collection, generation, streamIds, request));
  }

  parkedRequests(collection: string, generation: number): Promise<number> {
    return this.guard(() => this.parkedStreams.requests(collection, generation));
  }

  skipped(collection: string): Promise<(SkippedEvent & { generation: number })[]> {
    return this.guard(() => this.parkedStreams.skipped(collection));
  }

  async fingerprint(collection: string, generation: number): Promise<string | null> {
    const record = await this.guard(() => this.generations.findOne({ _id: generationId(collection, generation) }, { projection: { fingerprint: 1 } }));
    return record?.fingerprint ?? null;
  }

  async status(collection: string): Promise<CollectionStatus> {
    const model = await this.readModel(collection);
    this.lastLive.set(collection, model.live);
    const wanted = [model.live, ...(model.building === null ? [] : [model.building])].map((g) => generationId(collection, g));
    const docs = await this.guard(() => this.generations.find({ _id: { $in: wanted } }).toArray());
    const statusOf = (generation: number): GenerationStatus => {
      const d = docs.find((x) => x.generation === generation);
      return {
        generation,
        position: d ? fromMongoCheckpoint(d) : null,
        failure: d?.failure ?? null,
        updatedAt: d ? d.updatedAt.getTime() : 0,
      };
    };
    return { live: statusOf(model.live), building: model.building === null ? null : statusOf(model.building) };
  }

  /**
   * Crash-safe step by step. The number is claimed first, in the one update that makes it the
   * building generation and so replaces the one building before it; that one is dropped only then,
   * when no promotion can make it live any more (promote needs it building). A crash after the claim
   * leaves a building generation the next rebuild drops, and maybe the replaced one, which the sweep
   * of generations below the live one drops once a rebuild is promoted; never a number taken twice.
   * The steps after the claim can be repeated.
   */
  async startRebuild(collection: string): Promise<number> {
    const schema = this.schema(collection);
    let model = await this.readModel(collection);
    let claimed = await this.claimNext(model);
    if (!claimed) {
      // The building generation was promoted or abandoned meanwhile: if no other rebuild took a number, claim again.
      const now = await this.readModel(collection);
      if (now.next === model.next) claimed = await this.claimNext((model = now));
    }
    if (!claimed) throw new Error(`Another rebuild of ${collection} started at the same time`);
    if (model.building !== null) await this.dropGeneration(collection, model.building);
    const generation = model.next;
    await this.guard(async () => {
      // Replaces what a rebuild that crashed before this fix left under the same number.
      await this.generations.replaceOne(
        { _id: generationId(collection, generation) },
        { collection, generation, failure: null, updatedAt: new Date(), substrings: true, ...keptSchema(schema) },
        { upsert: true },
      );
      await this.collection(collection, generation).createIndexes(indexesFor(schema, { substrings: true }));
    });
    return generation;
  }

  /** Makes the next number the building generation, if the model is still as read; false if it is not. */
  private async claimNext(model: MongoReadModel): Promise<boolean> {
    const taken = await this.guard(() =>
      this.readModels.updateOne({ _id: model._id, next: model.next, building: model.building }, { $set: { building: model.next, next: model.next + 1 } }),
    );
    return taken.matchedCount > 0;
  }

  /**
   * Unclaimed first, in one conditional update, and dropped only if that matched. A write's filter
   * sees the primary's latest data, where a majority read may still show the generation building
   * after a swap the primary applied (a promotion that failed on its write concern): this never
   * drops a live generation. Once unclaimed it cannot be promoted (promote needs it building). A
   * crash before the drop leaves a generation below `next` that is neither live nor building: the
   * sweep of generations below the live one drops it once a later rebuild is promoted.
   */
  async abandonRebuild(collection: string, generation: number): Promise<void> {
    const unclaimed = await this.guard(() =>
      this.readModels.updateOne({ _id: collection, building: generation, live: { $ne: generation } }, { $set: { building: null } }),
    );
    if (unclaimed.matchedCount > 0) await this.dropGeneration(collection, generation);
  }

  async promote(collection: string, generation: number): Promise<void> {
    const model = await this.readModel(collection);
    assertPromotable(collection, model, generation, null, null); // not the building one: replaced, whatever the checkpoints
    const { live, building } = await this.status(collection);
    assertPromotable(collection, model, generation, building!.position, live.position);
    const builtKey = positionKey(building!.position ?? START);
    // Promoted either way: without the stamp, dropRetired stamps it later. The server's clock, as
    // dropRetired's, whichever instance runs it.
    const retire = async () => {
      await this.generations
        .updateOne({ _id: generationId(collection, model.live) }, { $currentDate: { retiredAt: true, updatedAt: true } })
        .catch(() => undefined);
    };
    await this.guard(async () => {
      // A promotion that did not take may have stamped the live generation retired: unstamped, so
      // that a later one that does not live to stamp it leaves it to the next sweep, not without grace.
      await this.generations.updateOne({ _id: generationId(collection, model.live), retiredAt: { $exists: true } }, { $unset: { retiredAt: '' } });
      // Not past the live checkpoint as the swap sees it: a commit into the live generation moves
      // liveKey first, and one that moves it after the swap is refused (moveLiveKey). Without
      // liveKey (no commit since an upgrade) the check above is all there is.
      const swapped = await this.readModels
        .updateOne(
          { _id: collection, live: model.live, building: generation, $or: [{ liveKey: { $exists: false } }, { liveKey: { $lte: builtKey } }] },
          { $set: { live: generation, building: null, liveKey: builtKey } },
        )
        .catch(async (error: unknown) => {
          // A write concern error comes after the primary applied the update (the driver does not
          // retry WriteConcernTimeout), and a lost answer leaves it open: what the primary holds now
          // says. Not applied: failed. Applied, it is promoted only once a majority has it (a
          // deposed primary's writes are rolled back): a write that changes nothing waits for the
          // primary's latest write to reach a majority, so it confirms the swap. Unconfirmed, the
          // outcome is unknown: unavailable, and the caller's abandonRebuild, which goes by the
          // primary, leaves the generation alone.
          const now = await this.readModel(collection, { onPrimary: true }).catch(() => null);
          if (now?.live !== generation) throw error;
          const confirmed = await this.readModels.updateOne({ _id: collection, live: generation }, { $set: { live: generation } }).catch((failure: unknown) => {
            if (translateMongoError(failure) instanceof StoreUnavailableError) return null;
            throw failure;
          });
          if (confirmed?.matchedCount === 0) throw error;
          if (!confirmed) {
            // Stamped all the same: rolled back, the generation it retires is live again, and only those below the live one are dropped.
            await retire();
            throw new StoreUnavailableError('MongoDB', `the promotion of ${collection} generation ${generation} is on the primary, not yet on a majority`);
          }
          return confirmed;
        });
      if (swapped.matchedCount === 0) {
        // Why it matched nothing, from what it was matched against: a majority read may not show it yet.
        const now = await this.readModel(collection, { onPrimary: true });
        if (now.live === model.live && now.building === generation) throw new RebuildBehindError(collection);
        throw new GenerationReplacedError(collection, generation);
      }
      await retire();
    });
    this.lastLive.set(collection, generation);
  }

  /** In every collection of the read model there is, by name: one a late commit made again after its drop included (refuseIfDropped). */
  async erase(collection: string, ids: string[]): Promise<void> {
    const schema = this.schema(collection);
    const names = await this.guard(() => this.db.listCollections(readModelCollections(collection), { nameOnly: true }).toArray());
    for (const { name } of names) await this.guard(() => scrub(this.db.collection<MongoReadDocument>(name), schema, ids));
  }

  /**
   * Drops the generations below the live one (numbers only grow) retired for longer than the
   * grace, by the server's clock ($$NOW), as their stamps are: instances' clocks may differ by
   * more than the grace. One whose promotion did not live to stamp it (a crash right after the
   * swap) is stamped now, so that reads still on it get the grace too.
   */
  async dropRetired(collection: string, graceMs: number): Promise<void> {
    const { live } = await this.readModel(collection);
    const below = { collection, generation: { $lt: live }, dropped: { $ne: true } };
    const retired = await this.guard(async () => {
      await this.generations.updateMany({ ...below, retiredAt: { $exists: false } }, { $currentDate: { retiredAt: true } });
      return this.generations.find({ ...below, $expr: { $lte: ['$retiredAt', { $subtract: ['$$NOW', graceMs] }] } }).toArray();
    });
    for (const r of retired) await this.dropGeneration(collection, r.generation);
  }

  acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    return this.leases.acquireLease(name, holder, ttlMs, replacing);
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return this.leases.releaseLease(name, holder);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private async dropGeneration(collection: string, generation: number): Promise<void> {
    await this.guard(async () => {
      await dropCollection(this.collection(collection, generation));
      await this.generations.updateOne({ _id: generationId(collection, generation) }, { $set: { dropped: true }, $currentDate: { updatedAt: true } });
      await this.parkedStreams.drop(collection, generation);
    });
  }

  /**
   * A commit checks its generation before writing, and a rebuild may drop it in between: MongoDB
   * then makes the collection again at the first upsert, with no index and in no list. Such a
   * collection is dropped again and the commit refused, as it would have been a moment earlier.
   */
  private async refuseIfDropped(collection: string, generation: number): Promise<void> {
    const record = await this.guard(() => this.generations.findOne({ _id: generationId(collection, generation) }));
    if (!record?.dropped) return;
    await this.dropGeneration(collection, generation);
    throw new GenerationReplacedError(collection, generation);
  }

  /**
   * Moves the live checkpoint a promotion compares, if `generation` is still live: else a promotion
   * replaced it while the commit wrote, and the commit is refused (its collection dropped again if
   * the grace period ran out meanwhile), before the projector answers any write it holds: it folds
   * the batch again into the new live generation.
   */
  private async moveLiveKey(collection: string, generation: number, key: string): Promise<void> {
    const moved = await this.guard(() => this.readModels.updateOne({ _id: collection, live: generation }, { $max: { liveKey: key } }));
    if (moved.matchedCount > 0) return;
    await this.refuseIfDropped(collection, generation);
    throw new GenerationReplacedError(collection, generation);
  }

  /**
   * The read model's document. `onPrimary`: as the primary holds it now, majority-committed or not:
   * what the conditional updates on it were matched against, for deciding what such an update did.
   */
  private async readModel(collection: string, { onPrimary = false } = {}): Promise<MongoReadModel> {
    const options = onPrimary ? { readConcern: { level: 'local' as const } } : {};
    const model = await this.guard(() => this.readModels.findOne({ _id: collection }, options));
    if (!model) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    return model;
  }

  /**
   * `read` of the live generation. The generation last seen is read alongside the read model's
   * document, not before it (one round trip): if that document names another live generation, the
   * read is made again there. A write answered before this read began is in the generation the
   * document names (a promotion swaps only once the new generation holds every commit into the
   * old one), and in the old one too as long as the old one was live when the document was read.
   */
  private async readLive<T>(collection: string, read: (generation: number) => Promise<T>): Promise<T> {
    const guess = this.lastLive.get(collection) ?? 1;
    const [model, result] = await this.guard(() => Promise.all([this.readModels.findOne({ _id: collection }), read(guess)]));
    if (!model) throw new Error(`Unknown collection ${collection}: call ensureCollection first`);
    this.lastLive.set(collection, model.live);
    return model.live === guess ? result : this.guard(() => read(model.live));
  }

  private async assertWritable(collection: string, generation: number): Promise<MongoReadModel> {
    const model = await this.readModel(collection);
    assertWritable(collection, model, generation);
    return model;
  }

  private collection(name: string, generation: number): Collection<MongoReadDocument> {
    return this.db.collection<MongoReadDocument>(readModelCollection(name, generation));
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
