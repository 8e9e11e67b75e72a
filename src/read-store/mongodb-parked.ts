import type { Collection, Db } from 'mongodb';
import { parkedFromJson, parkedToJson, parkInto } from './generation-rules';
import { generationId } from './mongodb-mapping';
import { ignoreDuplicate } from './mongodb-writes';
import { type ParkedChanges, type ParkedStream, ParkedStreamMovedError, type ParkRequest, type SkippedEvent } from './read-store.port';

export const PARKED_COLLECTION = 'read_model_parked';
export const SKIPPED_COLLECTION = 'read_model_skipped';
export const PARKED_REQUESTS_COLLECTION = 'read_model_parked_requests';

/**
 * A parked stream of one generation; `state` is the stream as JSON (positions as strings), but for
 * its request, a field of its own: the CLI sets it while the projector may be counting the stream's
 * events, and neither write overwrites the other's.
 */
interface MongoParked {
  _id: string;
  collection: string;
  generation: number;
  parkedAt: number;
  waiting: number;
  lastRevision: number;
  state: string;
  request: ParkRequest | null;
}

const fromDoc = (d: MongoParked): ParkedStream => ({ ...parkedFromJson<ParkedStream>(d.state), request: d.request ?? null });

interface MongoSkipped {
  _id: string;
  collection: string;
  generation: number;
  at: number;
  record: string;
}

interface MongoParkedRequests {
  _id: string;
  stamp: number;
}

const parkedId = (collection: string, generation: number, streamId: string) => `${generationId(collection, generation)}/${streamId}`;

/**
 * The MongoDB read store's parked streams, per generation. MongoDB has no transaction here (see
 * MongoDbReadStore), so a commit applies them after its documents and before its checkpoint; each
 * step can be replayed: parking an event at or before a stream's last counted revision changes
 * nothing (the update is conditional on it), a settlement writes a final state, a skip is inserted
 * once. A crash between steps leaves the checkpoint behind, and the batch folded again ends the same.
 * The projector holding the lease is the only writer of a generation's parked streams; the CLI
 * only sets requests, and moves the stamp.
 */
export class MongoDbParked {
  private readonly parked: Collection<MongoParked>;
  private readonly skips: Collection<MongoSkipped>;
  private readonly stamps: Collection<MongoParkedRequests>;

  constructor(db: Db) {
    this.parked = db.collection<MongoParked>(PARKED_COLLECTION);
    this.skips = db.collection<MongoSkipped>(SKIPPED_COLLECTION);
    this.stamps = db.collection<MongoParkedRequests>(PARKED_REQUESTS_COLLECTION);
  }

  /** The indexes the lists, counts and drops of a generation's parked streams and skips go by (no-ops once made). */
  async ensureIndexes(): Promise<void> {
    await this.parked.createIndex({ collection: 1, generation: 1, parkedAt: 1, _id: 1 }, { name: 'by_generation' });
    await this.skips.createIndex({ collection: 1, at: 1, _id: 1 }, { name: 'by_collection' });
  }

  /**
   * Refuses (ParkedStreamMovedError) a settlement of a stream parked further, or gone, since it was
   * read, before its commit writes anything: with no transaction, the documents and the skip written
   * first would stay though the settlement is refused. apply's conditional updates check again,
   * against a folder that parks the stream in between.
   */
  async refuseMoved(collection: string, generation: number, settled: NonNullable<ParkedChanges['settled']>): Promise<void> {
    if (settled.length === 0) return;
    const ids = settled.map((s) => parkedId(collection, generation, s.streamId));
    // The primary's latest, not the majority snapshot the client reads by default: a park by another
    // folder applied but not yet majority-committed refuses here too (one later rolled back: a retry).
    const stored = await this.parked.find({ _id: { $in: ids } }, { projection: { lastRevision: 1 }, readConcern: { level: 'local' } }).toArray();
    const last = new Map(stored.map((d) => [d._id, d.lastRevision]));
    const moved = settled.find((s, i) => last.get(ids[i]) !== s.seen.lastRevision);
    if (moved) throw new ParkedStreamMovedError(moved.streamId);
  }

  async apply(collection: string, generation: number, changes: ParkedChanges, now = Date.now()): Promise<void> {
    const parked = changes.parked ?? [];
    if (parked.length > 0) {
      const ids = [...new Set(parked.map((e) => parkedId(collection, generation, e.streamId)))];
      const known = new Map<string, ParkedStream>();
      for (const d of await this.parked.find({ _id: { $in: ids } }).toArray()) known.set(d._id, fromDoc(d));
      const before = new Map(known);
      for (const { streamId, ...event } of parked) {
        const id = parkedId(collection, generation, streamId);
        const next = parkInto(known.get(id) ?? null, streamId, event, now);
        if (next) known.set(id, next);
      }
      for (const [id, stream] of known) {
        const was = before.get(id);
        if (was === stream) continue;
        const { request: _, ...doc } = this.toDoc(collection, generation, stream);
        if (!was) await ignoreDuplicate(() => this.parked.insertOne({ ...doc, request: null }));
        else {
          // Made again if it is gone since it was read (settled by a holder whose lease lapsed): no event is left neither folded nor parked.
          const { _id, ...fields } = doc;
          await ignoreDuplicate(() => this.parked.updateOne({ _id, lastRevision: { $lt: stream.lastRevision } }, { $set: fields }, { upsert: true }));
        }
      }
    }
    // The record of a skip first: a crash before the settlement below replays the request, one after it keeps the record.
    for (const skip of changes.skipped ?? []) {
      const _id = `${parkedId(collection, generation, skip.streamId)}@${skip.revision}`;
      await ignoreDuplicate(() => this.skips.insertOne({ _id, collection, generation, at: skip.at, record: parkedToJson(skip) }));
    }
    // Each conditional on the stream's last parked revision as the settlement read it: another folder
    // that parked more of it since (this one's lease lost) refuses the settlement.
    for (const { streamId, now: stream, seen } of changes.settled ?? []) {
      const _id = parkedId(collection, generation, streamId);
      if (stream) {
        const { request: _, _id: __, ...fields } = this.toDoc(collection, generation, stream);
        const { matchedCount } = await this.parked.updateOne({ _id, lastRevision: seen.lastRevision }, { $set: fields });
        if (matchedCount === 0) throw new ParkedStreamMovedError(streamId);
        // The request it settled is done; one made since stays, for the next settlement.
        const { at, action, by } = seen.request ?? {};
        await this.parked.updateOne({ _id, 'request.at': at, 'request.action': action, 'request.by': by }, { $set: { request: null } });
      } else {
        const { deletedCount } = await this.parked.deleteOne({ _id, lastRevision: seen.lastRevision });
        if (deletedCount === 0) throw new ParkedStreamMovedError(streamId);
      }
    }
  }

  async list(collection: string, generation: number, limit?: number): Promise<ParkedStream[]> {
    const cursor = this.parked.find({ collection, generation }).sort({ parkedAt: 1, _id: 1 });
    if (limit !== undefined) cursor.limit(limit);
    return (await cursor.toArray()).map(fromDoc);
  }

  async count(collection: string, generation: number): Promise<{ streams: number; events: number }> {
    const [total] = await this.parked
      .aggregate<{ streams: number; waiting: number }>([
        { $match: { collection, generation } },
        { $group: { _id: null, streams: { $sum: 1 }, waiting: { $sum: '$waiting' } } },
      ])
      .toArray();
    return total ? { streams: total.streams, events: total.streams + total.waiting } : { streams: 0, events: 0 };
  }

  async request(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): Promise<string[]> {
    const filter = streamIds === 'all' ? { collection, generation } : { _id: { $in: streamIds.map((id) => parkedId(collection, generation, id)) } };
    const asked = (await this.parked.find(filter).toArray()).map((d) => fromDoc(d).streamId);
    await this.parked.updateMany(filter, { $set: { request } });
    await this.stamps.updateOne({ _id: generationId(collection, generation) }, { $inc: { stamp: 1 } }, { upsert: true });
    return asked;
  }

  async requests(collection: string, generation: number): Promise<number> {
    return (await this.stamps.findOne({ _id: generationId(collection, generation) }))?.stamp ?? 0;
  }

  async skipped(collection: string): Promise<(SkippedEvent & { generation: number })[]> {
    const docs = await this.skips.find({ collection }).sort({ at: 1, _id: 1 }).toArray();
    return docs.map((d) => ({ ...parkedFromJson<SkippedEvent>(d.record), generation: d.generation }));
  }

  /** What a dropped generation had parked goes with it; its skips stay, the record of who skipped what. */
  async drop(collection: string, generation: number): Promise<void> {
    await this.parked.deleteMany({ collection, generation });
    await this.stamps.deleteOne({ _id: generationId(collection, generation) });
  }

  private toDoc(collection: string, generation: number, stream: ParkedStream): MongoParked {
    return {
      _id: parkedId(collection, generation, stream.streamId),
      collection,
      generation,
      parkedAt: stream.parkedAt,
      waiting: stream.waiting,
      lastRevision: stream.lastRevision,
      state: parkedToJson({ ...stream, request: null }),
      request: stream.request,
    };
  }
}
