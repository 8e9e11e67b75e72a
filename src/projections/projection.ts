import type { StoredEvent } from '../event-store/event-store.port';
import type { CollectionSchema, ReadDocument } from '../read-store/read-store.port';

/**
 * A read model: which streams it follows and how one event changes one document. The projector
 * does the rest (batching, the revision guard, checkpoints), so a projection stays a pure fold.
 */
export interface Projection {
  /** Also the checkpoint's name. */
  name: string;
  schema: CollectionSchema;
  /** Events of streams whose id starts with `<streamPrefix>-` are folded in. */
  streamPrefix: string;
  /** The type of the event that erases a document's values (see foldBatch). */
  erasure: string;
  evolve(document: ReadDocument | null, event: StoredEvent): ReadDocument;
}

export const PROJECTIONS = Symbol('Projections');
