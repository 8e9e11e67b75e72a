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
  /** Events of streams whose id starts with one of these are folded in. */
  streamPrefixes: string[];
  /**
   * 'record': one document per stream, which each of its events changes (`evolve` gets it as it
   * stands). 'event': one new document per event (`evolve` gets null), as the change feed's index.
   */
  documents: 'record' | 'event';
  /** The document an event goes to. */
  documentIdOf(event: StoredEvent): string;
  /**
   * Where a document comes from, to fold it again alone (the CLI's verify): its record's stream
   * ('record'), or the one event it indexes ('event').
   */
  sourceOf(document: ReadDocument): { streamId: string; revision?: number };
  /** Whether `evolve` reads the events' field values: if not, its subscription leaves them sealed. */
  readsValues: boolean;
  /** The type of the event that erases a document's values (see foldBatch); none where documents hold no value. */
  erasure?: string;
  evolve(document: ReadDocument | null, event: StoredEvent): ReadDocument;
}

/** Whether the projection folds the events of `streamId`. */
export const follows = (projection: Projection, streamId: string) => projection.streamPrefixes.some((p) => streamId.startsWith(p));

export const PROJECTIONS = Symbol('Projections');
