import type { Position } from '../event-store/event-store.port';
import { StoreUnavailableError } from '../storage/store-unavailable.error';

/**
 * The read store port, in three parts: the documents folded from events, found with filters and
 * paging (ReadDocuments); their generations with the projectors' checkpoints (ReadGenerations); the
 * leases of the projectors (ReadLeases). Adapters: SQLite (embedded default) and MongoDB.
 */

/** One record as a read model keeps it. Deleted records stay as tombstones so a replay cannot revive them. */
export interface ReadDocument {
  id: string;
  accountId: string;
  /** Stream revision of the last event folded in: the guard against applying an event twice. */
  revision: number;
  /** Creation order: the global position of the record's first event. Lists sort on it. */
  seq: number;
  deleted: boolean;
  /** Seconds since the epoch. */
  created: number;
  fields: Record<string, string>;
}

/** How a list filter matches: exactly, exactly ignoring case, or as a substring ignoring case. */
export type MatchKind = 'exact' | 'exact-ci' | 'contains-ci';

export interface CollectionSchema {
  name: string;
  /** The fields lists can filter on, each with its match kind; the store indexes them. */
  filters: Record<string, MatchKind>;
}

export interface FindQuery {
  accountId: string;
  /** Field name to value; every name is a key of the collection's filters. */
  filters: Record<string, string>;
  order: 'newest' | 'oldest';
  offset: number;
  limit: number;
  /** Only documents past this `seq` in the order asked (created before it, for newest first): keyset paging. */
  after?: number;
  /** false: the matches are not counted (`total` 0), for pages that show no count (the change feed's). */
  count?: false;
}

/**
 * A find counts its matches up to this many: past it, counting would cost every list as much as
 * the account holds. (Offsets stop there too: see MAX_LIST_OFFSET.)
 */
export const COUNT_LIMIT = 10_000;

export interface FindResult {
  documents: ReadDocument[];
  /** How many live documents match, ignoring offset and limit: COUNT_LIMIT at most. */
  total: number;
  /** More than COUNT_LIMIT match: `total` is a lower bound. */
  capped: boolean;
}

/**
 * Generations. Each collection (read model) keeps its documents in numbered storage generations
 * (a table or collection each). Exactly one is `live`: get, find and getMany without a generation
 * read it. A rebuild fills a `building` generation beside it and promotes it atomically; the one it
 * replaces becomes `retired`, keeps its data until dropRetired removes it after a grace period (so
 * a read that resolved it just before the swap still finds it), and takes no more commits.
 * Each generation carries its own checkpoint and, once its projector met an event it cannot fold,
 * that failure, so operators in another process see both.
 */
export interface Checkpoint {
  generation: number;
  position: Position;
}

/** The event a projection could not fold, and why. */
export interface ProjectionFailure {
  streamId: string;
  revision: number;
  error: string;
}

export interface GenerationStatus {
  generation: number;
  /** Position of the last commit into this generation; null before the first. */
  position: Position | null;
  /** Set by recordFailure, cleared by the next commit into this generation. */
  failure: ProjectionFailure | null;
  /** Milliseconds since the epoch of the last change to this generation. */
  updatedAt: number;
}

export interface CollectionStatus {
  live: GenerationStatus;
  /** The generation a rebuild is filling (or an interrupted one left), if any. */
  building: GenerationStatus | null;
}

/**
 * Parked streams. A projector that cannot fold an event of a stream (see src/projections/parked.ts)
 * parks it and every later event of that stream, in order, and goes on with every other stream.
 * What is parked is kept per generation (a rebuild starts clean), with the checkpoint: a commit
 * writes its documents, its parked events and its checkpoint together (SQLite: one transaction;
 * MongoDB: documents, then the parked state, then the checkpoint, each step replayable), so a crash
 * can neither lose a park nor fold a parked stream's later event.
 */
export interface ParkedEvent {
  revision: number;
  position: Position;
  type: string;
  /** Why it could not be folded, at most PARKED_ERROR_LENGTH characters. */
  error: string;
}

/** An operator's request on a parked stream, carried out by the projector that holds the read model's lease. */
export interface ParkRequest {
  action: 'retry' | 'skip';
  /** Who asked (the OS user), when (ms since the epoch), and why (a skip's reason). */
  by: string;
  at: number;
  reason: string | null;
}

export interface ParkedStream {
  streamId: string;
  /** The first event it could not fold: it and every later event of the stream wait. */
  first: ParkedEvent;
  /** When it was parked, ms since the epoch. */
  parkedAt: number;
  /** Events of the stream after `first` skipped since, counted as they come. */
  waiting: number;
  /** The stream's last revision parked (first or waiting): a batch folded again counts nothing twice. */
  lastRevision: number;
  request: ParkRequest | null;
}

/** A parked event an operator dropped for good from a generation: who, when and why. */
export interface SkippedEvent extends ParkedEvent {
  streamId: string;
  by: string;
  at: number;
  reason: string;
}

/** What a commit changes of the generation's parked streams, with its documents and checkpoint. */
export interface ParkedChanges {
  /** Events it could not fold, in order: each parks its stream, or waits behind the stream's first. */
  parked?: (ParkedEvent & { streamId: string })[];
  /**
   * Streams a retry or skip settled: what they are now (null: unparked, every event folded), their
   * request done. `seen` is the stream as the settlement read it: if another folder has parked more
   * of it since (a lease lost meanwhile), the commit is refused (ParkedStreamMovedError); a request
   * made since is kept, for the next settlement.
   */
  settled?: { streamId: string; now: ParkedStream | null; seen: ParkedStream }[];
  /** Events skipped for good by this commit. */
  skipped?: SkippedEvent[];
}

/** A read, commit or promotion named a generation that is neither live nor building: a rebuild replaced it. */
export class GenerationReplacedError extends Error {
  constructor(
    readonly collection: string,
    readonly generation: number,
  ) {
    super(`Generation ${generation} of ${collection} is no longer live or building`);
    this.name = 'GenerationReplacedError';
  }
}

/** A settlement's commit refused: the stream was parked further since the settlement read it (see ParkedChanges.settled). */
export class ParkedStreamMovedError extends Error {
  constructor(readonly streamId: string) {
    super(`${streamId} was parked further while it was settled (another instance folds the read model now)`);
    this.name = 'ParkedStreamMovedError';
  }
}

/** promote refused: the building generation's checkpoint is behind the live one's. Catch up, then retry. */
export class RebuildBehindError extends Error {
  constructor(readonly collection: string) {
    super(`The rebuild of ${collection} is behind the live read model`);
    this.name = 'RebuildBehindError';
  }
}

/**
 * The documents as the API and the change feed read them, from the live generation (a projector's
 * getMany names its own), and their erasure. No checkpoint and no generation's state: a request
 * needs none, and queries never commit.
 */
export interface ReadDocuments {
  /**
   * Documents by id, tombstones included, whatever their account; from the live generation by
   * default. Given a generation (as projectors do), throws GenerationReplacedError unless it is
   * live or building: its projector must move to the live one.
   */
  getMany(collection: string, ids: string[], generation?: number): Promise<Map<string, ReadDocument>>;
  /** One live document of the account, or null. */
  get(collection: string, accountId: string, id: string): Promise<ReadDocument | null>;
  /** The account's first-created live document, or null: one index lookup, no count. */
  oldest(collection: string, accountId: string): Promise<ReadDocument | null>;
  /**
   * A page of the account's live documents. A filter the live generation was built without (its
   * schema gained it since, and the rebuild that adds it is under way) throws FilterNotBuiltError,
   * a StoreUnavailableError (503): it works once the rebuild is promoted.
   */
  find(collection: string, query: FindQuery): Promise<FindResult>;
  /**
   * Erasure: leaves the documents `ids` of every generation that still has storage (live, building,
   * retired) a tombstone with no field value, and makes sure no old copy of their values stays in
   * the store's files (SQLite: secure deletion, then a checkpoint that truncates the log).
   */
  erase(collection: string, ids: string[]): Promise<void>;
  /**
   * The live generation's documents in id order (ids compared byte by byte), tombstones included,
   * whatever their account: those past `after` ('' for the first page), at most `limit` of them.
   * The CLI's verify reads a whole read model so, a page at a time.
   */
  pageById(collection: string, after: string, limit: number): Promise<ReadDocument[]>;
}

/**
 * The generations of each collection with their checkpoints: what projectors, rebuilds, readiness
 * and the CLI use. `commit` is here, not with the documents: it is the only way a checkpoint moves,
 * it names a generation and is refused as that generation's state says, and its documents go in the
 * same transaction as the checkpoint so the checkpoint never claims documents the store lacks. No
 * reader of documents commits.
 */
export interface ReadGenerations {
  /**
   * Creates the collection and its indexes if missing, with generation 1 live (built with `schema`)
   * when the collection has no generation yet. A live generation made before generations kept their
   * schema's fingerprint is taken as built with `schema`, and stamped so. Idempotent. Every other
   * method needs it called first in this process; it does not rebuild: a live generation built with
   * another schema keeps serving (see fingerprint) until a rebuild replaces it.
   */
  ensureCollection(schema: CollectionSchema): Promise<void>;
  /**
   * Writes each document into the checkpoint's generation unless the stored one already has its
   * revision or a newer one, saves the checkpoint unless the stored one is as far or further, and
   * clears the generation's failure, in one transaction where the store has them (else documents
   * first and checkpoint last: a replay then changes nothing). Throws GenerationReplacedError unless
   * that generation is live or building when the commit runs and, without a transaction, still so
   * when its checkpoint is saved; either way, no checkpoint moves and the caller answers no one.
   * The documents are stored as the generation's own schema says (its filters), whatever the code's is now.
   */
  commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint, parked?: ParkedChanges): Promise<void>;
  /** The generation's parked streams, oldest parked first, at most `limit` of them (default all). */
  parked(collection: string, generation: number, limit?: number): Promise<ParkedStream[]>;
  /** How many streams of the generation are parked, and how many events they hold (each first and those waiting behind it). */
  parkedCount(collection: string, generation: number): Promise<{ streams: number; events: number }>;
  /**
   * Asks the lease holder to retry or skip the named parked streams (`all`: every one): sets the
   * request on each, and moves the generation's request stamp on. Returns the streams asked.
   */
  requestParked(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): Promise<string[]>;
  /** A number that moves on with every requestParked: a projector reads it on its poll, and the requests only when it moved. */
  parkedRequests(collection: string, generation: number): Promise<number>;
  /**
   * The events skipped for good from the read model, oldest first, each with the generation it was
   * skipped from: the record of who skipped what stays when a rebuild replaces that generation.
   */
  skipped(collection: string): Promise<(SkippedEvent & { generation: number })[]>;
  /** Keeps the failure with the generation's checkpoint, for status and readiness in any process. */
  recordFailure(collection: string, generation: number, failure: ProjectionFailure): Promise<void>;
  status(collection: string): Promise<CollectionStatus>;
  /**
   * The fingerprint of the schema `generation` was built with (generation-rules.ts'
   * schemaFingerprint); null for one made before generations kept it, or one the store never had.
   */
  fingerprint(collection: string, generation: number): Promise<string | null>;
  /**
   * Drops any building generation (an interrupted rebuild's leftovers) and creates an empty one,
   * numbered above every generation the collection ever had, built with the schema ensureCollection
   * was last given in this process. Returns its number.
   */
  startRebuild(collection: string): Promise<number>;
  /**
   * Atomically makes the building `generation` live and retires the live one. Throws
   * RebuildBehindError if its checkpoint is behind the live one's (no checkpoint counts as START)
   * as the swap sees it, a commit racing it included, GenerationReplacedError if it is not the
   * building generation; either way nothing changes. A swap the store applied though its answer
   * failed (MongoDB: a write concern timeout) resolves once the store confirms it durable (MongoDB:
   * on a majority), else fails as StoreUnavailableError: the outcome is unknown, and abandonRebuild
   * goes by what the store holds.
   */
  promote(collection: string, generation: number): Promise<void>;
  /**
   * Drops `generation` if it is still building: a rebuild that failed or was stopped gives its
   * storage (and, on SQLite, the connection's rebuild settings) back at once, not at the next
   * rebuild. Nothing happens to a generation that is live, retired, dropped or another rebuild's,
   * as the store holds it when this runs: a promotion that failed may have made it live.
   */
  abandonRebuild(collection: string, generation: number): Promise<void>;
  /** Drops the retired generations retired at least `graceMs` ago. */
  dropRetired(collection: string, graceMs: number): Promise<void>;
}

/** The leases that let one instance of the service at a time fold each read model. */
export interface ReadLeases {
  /**
   * Takes `name` for `holder` for `ttlMs` from now if it is free, expired, already `holder`'s (a
   * renewal) or `replacing`'s (a holder known to be dead). Returns who holds it after the attempt:
   * `holder` when it succeeded. The store's clock decides expiry (MongoDB's; for SQLite, the one
   * machine's), so instances' clocks need not agree.
   */
  acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string>;
  /** Gives the lease up if `holder` holds it, so another instance takes it at its next attempt. */
  releaseLease(name: string, holder: string): Promise<void>;
}

/**
 * The whole read store, as an adapter implements it and the wiring provides it (READ_STORE): one
 * object, one connection. Each consumer names the part it uses.
 */
/**
 * A find filtered on a field the live generation was built without: the code's schema gained the
 * filter, and the rebuild that adds it has not been promoted yet. Unavailable (503) meanwhile.
 */
export class FilterNotBuiltError extends StoreUnavailableError {
  constructor(
    store: StoreUnavailableError['store'],
    collection: string,
    readonly field: string,
  ) {
    super(store, `the live read model ${collection} has no filter ${field} yet`);
    this.message = `The live read model ${collection} has no filter ${field} yet: a rebuild adds it`;
    this.name = 'FilterNotBuiltError';
  }
}

export interface ReadStore extends ReadDocuments, ReadGenerations, ReadLeases {
  close(): Promise<void>;
}

export const READ_STORE = Symbol('ReadStore');
