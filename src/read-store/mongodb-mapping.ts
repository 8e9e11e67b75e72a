import { Filter, IndexDescription, MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } from 'mongodb';
import type { Position } from '../event-store/event-store.port';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import type { CollectionSchema, FindQuery, MatchKind, ReadDocument } from './read-store.port';

/** The pure half of the MongoDB read store: names, document shapes, filters, indexes, errors. */

/** A read model as MongoDB keeps it: the port's document plus `match`, the values filters compare. */
export interface MongoReadDocument {
  _id: string;
  accountId: string;
  revision: number;
  seq: number;
  deleted: boolean;
  created: number;
  fields: Record<string, string>;
  /** Per filter field: the value as is (exact) or lowercased (exact-ci, contains-ci), so indexes serve case-insensitive matches. */
  match: Record<string, string>;
}

/** Which generation of a read model is live, and which one a rebuild is filling: one document, so a promotion is one atomic update. */
export interface MongoReadModel {
  _id: string;
  live: number;
  building: number | null;
  /** The number the next rebuild takes: numbers are never reused. */
  next: number;
}

/** One generation's checkpoint and failure. */
export interface MongoGeneration {
  _id: string;
  collection: string;
  generation: number;
  commit?: string;
  prepare?: string;
  /** Sorts as the position does: what the checkpoint's compare-and-set compares. */
  key?: string;
  failure: { streamId: string; revision: number; error: string } | null;
  updatedAt: Date;
  retiredAt?: Date;
  dropped?: boolean;
}

export const READ_MODELS_COLLECTION = 'read_models';
export const GENERATIONS_COLLECTION = 'read_model_generations';

export const generationId = (collection: string, generation: number) => `${collection}:${generation}`;

const NAME = /^[a-z][a-z0-9_]*$/;

/** The physical collection of one generation of a read model. Every name goes through here. */
export function readModelCollection(name: string, generation: number): string {
  if (!NAME.test(name) || name.includes('__')) throw new Error(`Invalid collection name: ${name}`);
  return `rm_${name}__g${generation}`;
}

export function checkFieldNames(schema: CollectionSchema): void {
  for (const field of Object.keys(schema.filters)) {
    if (!NAME.test(field)) throw new Error(`Invalid field name: ${field}`);
  }
}

export function matchValue(kind: MatchKind, value: string): string {
  return kind === 'exact' ? value : value.toLowerCase();
}

export function toMongoDocument(schema: CollectionSchema, d: ReadDocument): MongoReadDocument {
  const match: Record<string, string> = {};
  for (const [field, kind] of Object.entries(schema.filters)) match[field] = matchValue(kind, d.fields[field] ?? '');
  return { _id: d.id, accountId: d.accountId, revision: d.revision, seq: d.seq, deleted: d.deleted, created: d.created, fields: d.fields, match };
}

export function fromMongoDocument(m: MongoReadDocument): ReadDocument {
  return { id: m._id, accountId: m.accountId, revision: m.revision, seq: m.seq, deleted: m.deleted, created: m.created, fields: m.fields };
}

/** Live documents only: the indexes are partial on `deleted: false`, and queries must say so to use them. */
const LIVE = { deleted: false } as const;

/** One index per list: the account's live documents in creation order, and the same narrowed by each exact filter. */
export function indexesFor(schema: CollectionSchema): IndexDescription[] {
  const exactFields = Object.keys(schema.filters).filter((f) => schema.filters[f] !== 'contains-ci');
  return [
    { name: 'live_by_account', key: { accountId: 1, seq: 1 }, partialFilterExpression: LIVE },
    ...exactFields.map((f) => ({
      name: `live_by_${f}`,
      key: { accountId: 1, [`match.${f}`]: 1, seq: 1 },
      partialFilterExpression: LIVE,
    })),
  ];
}

/** Regex metacharacters of user input made literal: contains-ci never runs a pattern a client wrote. */
export function escapeRegex(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function findFilter(collection: string, schema: CollectionSchema, query: FindQuery): Filter<MongoReadDocument> {
  const filter: Filter<MongoReadDocument> = { accountId: query.accountId, ...LIVE };
  for (const [field, value] of Object.entries(query.filters)) {
    const kind = schema.filters[field];
    if (!kind) throw new Error(`Collection ${collection} has no filter ${field}`);
    const wanted = matchValue(kind, value);
    filter[`match.${field}`] = kind === 'contains-ci' ? { $regex: escapeRegex(wanted) } : wanted;
  }
  return filter;
}

/**
 * A position as a string that sorts like the position: each part shifted by one (START's -1
 * becomes 0) and zero-padded to the 20 digits of a uint64.
 */
export function positionKey(position: Position): string {
  const part = (n: bigint) => {
    if (n < -1n) throw new RangeError(`Invalid position part ${n}`);
    return (n + 1n).toString().padStart(20, '0');
  };
  return `${part(position.commit)}:${part(position.prepare)}`;
}

export function toMongoCheckpoint(position: Position): { commit: string; prepare: string; key: string } {
  return { commit: position.commit.toString(), prepare: position.prepare.toString(), key: positionKey(position) };
}

/** The generation's checkpoint, null before its first commit. */
export function fromMongoCheckpoint(c: Pick<MongoGeneration, 'commit' | 'prepare'>): Position | null {
  return c.commit === undefined || c.prepare === undefined ? null : { commit: BigInt(c.commit), prepare: BigInt(c.prepare) };
}

const DUPLICATE_KEY = 11000;

/**
 * Indexes of the bulk write's operations that failed on a duplicate _id: a guarded upsert whose
 * guard did not match an existing document tried to insert it. Null when anything else failed.
 */
export function duplicateKeyFailures(error: unknown): number[] | null {
  if (!(error instanceof MongoBulkWriteError)) return null;
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  if (writeErrors.length === 0 || writeErrors.some((w) => w.code !== DUPLICATE_KEY)) return null;
  return writeErrors.map((w) => w.index);
}

export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/** The port's error for a driver error: no server to talk to becomes StoreUnavailableError. */
export function translateMongoError(error: unknown): unknown {
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError) {
    return new StoreUnavailableError('MongoDB', error.message);
  }
  return error;
}
