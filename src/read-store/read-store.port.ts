import type { Position } from '../event-store/event-store.port';

/**
 * The read store port: documents folded from events, found with filters and paging, plus the
 * projectors' checkpoints. Adapters: SQLite (embedded default) and MongoDB.
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
}

export interface FindResult {
  documents: ReadDocument[];
  /** How many live documents match, ignoring offset and limit. */
  total: number;
}

export interface Checkpoint {
  projection: string;
  position: Position;
}

export interface ReadStore {
  /** Creates the collection and its indexes if missing. Idempotent. */
  ensureCollection(schema: CollectionSchema): Promise<void>;
  /** Documents by id, tombstones included, whatever their account. */
  getMany(collection: string, ids: string[]): Promise<Map<string, ReadDocument>>;
  /** One live document of the account, or null. */
  get(collection: string, accountId: string, id: string): Promise<ReadDocument | null>;
  find(collection: string, query: FindQuery): Promise<FindResult>;
  /**
   * Writes each document unless the stored one already has its revision or a newer one, and
   * saves the checkpoint unless the stored one is as far or further; in one transaction where the
   * store has them, else documents first and checkpoint last (a replay then changes nothing).
   */
  commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint): Promise<void>;
  getCheckpoint(projection: string): Promise<Position | null>;
  close(): Promise<void>;
}

export const READ_STORE = Symbol('ReadStore');
