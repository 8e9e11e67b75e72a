import type { ReadDocument, ReadDocuments } from '../read-store/read-store.port';
import { RecordKind, streamIdOf } from './record';
import type { DataKeys } from '../sealing/data-keys';

/**
 * Reads and lists leave out the records whose data keys are destroyed. Once its key is gone a
 * record is erased, but its read model document is scrubbed only later (the erasure's event folded,
 * then the scrub): with the read store down or its disk full, that may take until it is back, and
 * the document still holds the values meanwhile.
 *
 * The key store is asked, for the page's records only (one lookup by primary key of at most a
 * page's ids, beside the read), rather than a set of erased ids kept for the queries: the key store
 * is where an erasure starts, so it is right the moment the key is destroyed, on every instance
 * and worker alike, with nothing to keep in step; and a set of its own would be one more write the
 * erasure needs while its stores are failing.
 */
export async function withoutErased(keys: DataKeys, kind: RecordKind, documents: ReadDocument[]): Promise<ReadDocument[]> {
  const destroyed = await keys.destroyedAmong(documents.map((d) => streamIdOf(kind, d.id)));
  return destroyed.size === 0 ? documents : documents.filter((d) => !destroyed.has(streamIdOf(kind, d.id)));
}

/** One document of the account from the read model, or null, and null too once its record's key is destroyed (see withoutErased). */
export async function getUnlessErased(
  readStore: ReadDocuments,
  keys: DataKeys,
  kind: RecordKind,
  collection: string,
  accountId: string,
  id: string,
): Promise<ReadDocument | null> {
  // Side by side: the id is known before the read.
  const [document, destroyed] = await Promise.all([readStore.get(collection, accountId, id), keys.destroyedAmong([streamIdOf(kind, id)])]);
  return destroyed.size === 0 ? document : null;
}
