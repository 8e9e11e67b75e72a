import type { Projection } from '../projections/projection';
import type { CollectionSchema } from '../read-store/read-store.port';
import { evolveRecord, RecordKind, recordIdOf, streamIdOf } from './record';

/** A read model of one kind of record: one document per record, folded like the write side folds it. */
export function recordProjection(kind: RecordKind, schema: CollectionSchema): Projection {
  return {
    name: schema.name,
    schema,
    streamPrefixes: [streamIdOf(kind, '')],
    documents: 'record',
    documentIdOf: (event) => recordIdOf(kind, event.streamId),
    sourceOf: (document) => ({ streamId: streamIdOf(kind, document.id) }),
    readsValues: true,
    erasure: kind.events.erased,
    evolve: (document, event) => evolveRecord(kind, document, event),
  };
}
