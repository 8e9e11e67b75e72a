import { occurredAt, Position } from '../event-store/event-store.port';
import type { Projection } from '../projections/projection';
import type { ReadDocument } from '../read-store/read-store.port';
import { RecordKind, streamIdOf } from '../records/record';

/** The change feed's index: the collection, and the name its projector and rebuilds go by. */
export const FEED = 'feed';

/**
 * The change feed's index: one document per event of a record's stream, by account, in the event
 * store's order. It holds where each event is (its stream, revision and position), never its
 * values: a page of the feed reads its events from the event store and opens them with their
 * records' keys as it serves them, so an erasure reaches every entry at once.
 *
 * Ordered by the event's prepare position (EventStoreDB's log position of the event itself;
 * SQLite's sequence number), which is unique per event and follows the store's global order: the
 * service appends without explicit transactions, so one append's events are written together and
 * after the append before it.
 */
export function feedProjection(kinds: RecordKind[]): Projection {
  return {
    name: FEED,
    schema: { name: FEED, filters: {} },
    streamPrefixes: kinds.map((kind) => streamIdOf(kind, '')),
    documents: 'event',
    documentIdOf: (event) => String(event.position.prepare),
    sourceOf: (document) => ({ streamId: document.fields.stream, revision: Number(document.fields.revision) }),
    // Where each event is, never what it says: its values stay sealed.
    readsValues: false,
    evolve: (_, event): ReadDocument => ({
      id: String(event.position.prepare),
      accountId: event.metadata.accountId,
      // Each document is its event's alone: written once, never changed (the revision guard keeps the first).
      revision: 0,
      seq: Number(event.position.prepare),
      deleted: false,
      created: Math.floor(occurredAt(event).getTime() / 1000),
      fields: { stream: event.streamId, revision: String(event.revision), commit: String(event.position.commit) },
    }),
  };
}

/** Where the event of a feed document is. */
export interface FeedEntryRef {
  streamId: string;
  revision: number;
  position: Position;
}

export const entryRefOf = (document: ReadDocument): FeedEntryRef => ({
  streamId: document.fields.stream,
  revision: Number(document.fields.revision),
  position: { commit: BigInt(document.fields.commit), prepare: BigInt(document.seq) },
});
