import type { Collection, Filter, IndexDescription } from 'mongodb';
import type { Position } from '../event-store/event-store.port';
import { schemaFingerprint } from './generation-rules';
import { COUNT_LIMIT, type CollectionSchema, type FindQuery, type MatchKind, type ReadDocument } from './read-store.port';
import { substringFields, substringQuery, substringTokens } from './substrings';

/** The pure half of the MongoDB read store: names, document shapes, filters, indexes. */

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
  /**
   * The substring tokens of a live document's contains-ci values (substrings.ts): what the
   * substring index holds. Empty for a deleted one; absent in generations made before it.
   */
  substrings?: string[];
}

/** Which generation of a read model is live, and which one a rebuild is filling: one document, so a promotion is one atomic update. */
export interface MongoReadModel {
  _id: string;
  live: number;
  building: number | null;
  /** The number the next rebuild takes: numbers are never reused. */
  next: number;
  /**
   * The live generation's checkpoint (its `key`), moved by each commit into it only while it is
   * live, and compared by a promotion in the update that swaps: a commit and a promotion are
   * ordered on this one document. Absent until the first commit after an upgrade.
   */
  liveKey?: string;
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
  /** Its documents carry their substring tokens (`substrings`): made since the substring index was. */
  substrings?: boolean;
  /** The schema it was built with: its fingerprint and its filters. Absent if made before generations kept them. */
  fingerprint?: string;
  filters?: Record<string, MatchKind>;
}

/** What the store knows of how a generation was built, once read (it never changes). */
export interface Built {
  /** Its documents carry substring tokens (see MongoGeneration.substrings). */
  substrings: boolean;
  /** The schema it was built with: its documents' `match` and its indexes. */
  schema: CollectionSchema;
  /** Its record keeps its schema; if not, it was made before generations kept it (taken as built with the code's). */
  kept: boolean;
}

/** What a generation built with `schema` keeps of it. */
export function keptSchema(schema: CollectionSchema): Pick<MongoGeneration, 'fingerprint' | 'filters'> {
  return { fingerprint: schemaFingerprint(schema), filters: schema.filters };
}

export const READ_MODELS_COLLECTION = 'read_models';
export const GENERATIONS_COLLECTION = 'read_model_generations';
export const LEASES_COLLECTION = 'read_model_leases';

/** Who folds a read model, until when (the server's clock). */
export interface MongoLease {
  _id: string;
  holder: string;
  expiresAt: Date;
}

export const generationId = (collection: string, generation: number) => `${collection}:${generation}`;

const NAME = /^[a-z][a-z0-9_]*$/;

/** What the names of a read model's collections start with, the generation's number following. */
function collectionPrefix(name: string): string {
  if (!NAME.test(name) || name.includes('__')) throw new Error(`Invalid collection name: ${name}`);
  return `rm_${name}__g`;
}

/** The physical collection of one generation of a read model. Every name goes through here. */
export function readModelCollection(name: string, generation: number): string {
  return `${collectionPrefix(name)}${generation}`;
}

/** A filter on collection names matching every generation's collection of a read model, whatever its records say. */
export function readModelCollections(name: string): { name: RegExp } {
  return { name: new RegExp(`^${collectionPrefix(name)}[0-9]+$`) };
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
  const document: MongoReadDocument = {
    _id: d.id,
    accountId: d.accountId,
    revision: d.revision,
    seq: d.seq,
    deleted: d.deleted,
    created: d.created,
    fields: d.fields,
    match,
  };
  const substrings = substringFields(schema);
  if (substrings.length === 0) return document;
  const tokens = d.deleted
    ? ''
    : substringTokens(
        d.accountId,
        substrings.map((f) => match[f]),
      );
  return { ...document, substrings: tokens ? tokens.split(' ') : [] };
}

export function fromMongoDocument(m: MongoReadDocument): ReadDocument {
  return { id: m._id, accountId: m.accountId, revision: m.revision, seq: m.seq, deleted: m.deleted, created: m.created, fields: m.fields };
}

/** Live documents only: the indexes are partial on `deleted: false`, and queries must say so to use them. */
const LIVE = { deleted: false } as const;

/**
 * One index per list: the account's live documents in creation order, the same narrowed by each
 * exact filter, and the substring index: each token (account-scoped, see substrings.ts) with the
 * documents holding it in creation order, so a substring query reads one token's documents of
 * that account newest first, stops at its page, and $regex checks each. A generation without
 * `substrings` (made before the index came) has no substring index.
 */
export function indexesFor(schema: CollectionSchema, { substrings }: { substrings: boolean }): IndexDescription[] {
  const exactFields = Object.keys(schema.filters).filter((f) => schema.filters[f] !== 'contains-ci');
  return [
    { name: 'live_by_account', key: { accountId: 1, seq: 1 }, partialFilterExpression: LIVE },
    ...exactFields.map((f) => ({
      name: `live_by_${f}`,
      key: { accountId: 1, [`match.${f}`]: 1, seq: 1 },
      partialFilterExpression: LIVE,
    })),
    ...(substrings && substringFields(schema).length > 0 ? [{ name: SUBSTRINGS_INDEX, key: { substrings: 1, seq: 1 }, partialFilterExpression: LIVE }] : []),
  ];
}

export const SUBSTRINGS_INDEX = 'live_by_substrings';

/**
 * Regex metacharacters of user input made literal: contains-ci never runs a pattern a client
 * wrote. A NUL becomes the escape \x00: MongoDB refuses a pattern holding the byte itself.
 */
export function escapeRegex(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\0/g, '\\x00');
}

/**
 * A find's filter. With `substrings` (the generation has the index), contains-ci filters also ask
 * for their tokens: the server reads the substring index by one of them and checks each document
 * it gives against the others and the $regex, the exact check.
 */
export function findFilter(collection: string, schema: CollectionSchema, query: FindQuery, { substrings = false } = {}): Filter<MongoReadDocument> {
  const filter: Filter<MongoReadDocument> = { accountId: query.accountId, ...LIVE };
  const tokens: string[] = [];
  const places = substrings ? substringFields(schema) : [];
  for (const [field, value] of Object.entries(query.filters)) {
    const kind = schema.filters[field];
    if (!kind) throw new Error(`Collection ${collection} has no filter ${field}`);
    const wanted = matchValue(kind, value);
    filter[`match.${field}`] = kind === 'contains-ci' ? { $regex: escapeRegex(wanted) } : wanted;
    if (kind === 'contains-ci' && substrings) tokens.push(...substringQuery(query.accountId, places.indexOf(field), wanted).split(' '));
  }
  if (tokens.length > 0) filter.substrings = { $all: tokens };
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

/**
 * A find's page in one generation's collection, and how many match (up to one past COUNT_LIMIT:
 * what lies beyond would cost every list to count; 0 uncounted). The count ignores paging; the
 * page starts past `after` on the index's seq, skipping nothing.
 */
export function findPage(
  c: Collection<MongoReadDocument>,
  collection: string,
  schema: CollectionSchema,
  query: FindQuery,
  { substrings, maxTimeMS }: { substrings: boolean; maxTimeMS: number },
): Promise<[MongoReadDocument[], number]> {
  const filter = findFilter(collection, schema, query, { substrings });
  const options = { maxTimeMS, ...(substrings ? { hint: SUBSTRINGS_INDEX } : {}) };
  const page = query.after === undefined ? filter : { ...filter, seq: { [query.order === 'newest' ? '$lt' : '$gt']: query.after } };
  return Promise.all([
    c
      .find(page, options)
      .sort({ seq: query.order === 'newest' ? -1 : 1 })
      .skip(query.offset)
      .limit(query.limit)
      .toArray(),
    query.count === false ? 0 : c.countDocuments(filter, { limit: COUNT_LIMIT + 1, ...options }),
  ]);
}
