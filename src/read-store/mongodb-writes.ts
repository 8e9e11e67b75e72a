import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import { duplicateKeyFailures, isDuplicateKey } from '../storage/mongodb-client';
import { MongoReadDocument, toMongoDocument } from './mongodb-mapping';
import type { CollectionSchema, ReadDocument } from './read-store.port';

/**
 * Writes each document into a generation's collection (as `schema`, the one it was built with,
 * says) unless the stored one has its revision or a newer one. Guarded upserts, then once more those
 * that failed as duplicates: two writers inserting the same new document race, and the loser's
 * retry now meets the winner's document and its guard. A duplicate on the retry means the stored
 * revision is as new or newer. The driver's errors as they are: the caller translates them.
 */
export async function writeNewer(c: Collection<MongoReadDocument>, schema: CollectionSchema, documents: ReadDocument[]): Promise<void> {
  if (documents.length === 0) return;
  let pending: AnyBulkWriteOperation<MongoReadDocument>[] = documents.map((d) => {
    const { _id, ...replacement } = toMongoDocument(schema, d);
    // Replaces only an older revision; when the guard fails on an existing document, the upsert
    // tries to insert its _id and fails as a duplicate: that document is already as new or newer.
    return { replaceOne: { filter: { _id, revision: { $lt: d.revision } }, replacement, upsert: true } };
  });
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

/** Runs an insert (an upsert) that another process may be making at the same time: the other one's winning is no failure. */
export async function ignoreDuplicate(operation: () => Promise<unknown>): Promise<void> {
  try {
    await operation();
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
  }
}

/** Drops a generation's collection; one never created (a generation with no documents) is dropped already. */
export async function dropCollection(c: Collection<MongoReadDocument>): Promise<void> {
  await c.drop().catch((error: unknown) => {
    if ((error as { codeName?: string }).codeName !== 'NamespaceNotFound') throw error;
  });
}

/** Erasure: the documents `ids` left tombstones with no value, their filters' values and substring tokens gone. */
export async function scrub(c: Collection<MongoReadDocument>, schema: CollectionSchema, ids: string[]): Promise<void> {
  // The whole `match` replaced, not field by field: a filter an earlier release had leaves its value behind otherwise.
  const match = Object.fromEntries(Object.keys(schema.filters).map((f) => [f, '']));
  await c.updateMany({ _id: { $in: ids } }, { $set: { fields: {}, deleted: true, match, substrings: [] } });
}
