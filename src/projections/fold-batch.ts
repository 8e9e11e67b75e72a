import { boundedError } from '../read-store/generation-rules';
import { comparePositions, EventBatch, Position, type StoredEvent } from '../event-store/event-store.port';
import type { ParkedChanges, ReadDocument, ReadDocuments, ReadGenerations } from '../read-store/read-store.port';
import { parkedEventOf, reasonOf, type Parking } from './parked';
import { follows, type Projection } from './projection';

/**
 * An event a projection could not fold. Without parking (POISON_EVENTS=stop, a strict rebuild) it
 * stops the projection: skipping it would corrupt the model.
 */
export class PoisonEventError extends Error {
  readonly reason: string;

  constructor(
    readonly streamId: string,
    readonly revision: number,
    error: unknown,
  ) {
    const reason = error instanceof Error ? error.message : String(error);
    super(`cannot apply ${streamId}@${revision}: ${reason}`);
    this.name = 'PoisonEventError';
    this.reason = reason;
  }
}

/**
 * Folds one batch into one generation of a projection's read model: the documents the batch
 * touches are loaded once, folded in memory, and written back together with the new checkpoint.
 * A batch with nothing for this model still saves the checkpoint (a small write, not synced): a
 * rebuild's generation must say how far it is to be promoted (the projector, which serves, saves
 * such checkpoints less often: see CHECKPOINT_EVERY_MS).
 *
 * `began` is the event store's head when this fold began (see the end). `known` holds documents as
 * this folder last wrote them to this generation: those are not read again. Returns the documents
 * the batch wrote.
 *
 * With `parking`, an event it cannot fold parks its stream rather than stopping: that event and
 * every later event of the stream (this batch's, and later batches' while the stream stays in
 * `parking.streams`) are left unfolded, in order, and committed as parked with the documents and
 * the checkpoint; every other stream goes on.
 */
export async function foldBatch(
  projection: Projection,
  readStore: ReadDocuments & Pick<ReadGenerations, 'commit'>,
  generation: number,
  batch: EventBatch,
  began: Position,
  known?: { get(id: string): ReadDocument | undefined },
  parking?: Parking,
): Promise<ReadDocument[]> {
  const relevant = batch.events.filter((e) => follows(projection, e.streamId));
  const collection = projection.schema.name;
  const idOf = (event: StoredEvent) => projection.documentIdOf(event);
  // A stream whose first event is in this batch is folded from scratch, so only the others are
  // looked up (in a rebuild, nearly every document is new; an event's own document always is).
  // Should the store hold it already, as far or further, commit's revision guard keeps the stored one.
  const perEvent = projection.documents === 'event';
  const started = new Set<string>();
  const existing = new Set<string>();
  for (const event of relevant) {
    const id = idOf(event);
    if (perEvent || event.revision === 0) started.add(id);
    else if (!started.has(id)) existing.add(id);
  }
  const documents = new Map<string, ReadDocument>();
  const unknown: string[] = [];
  for (const id of existing) {
    const document = known?.get(id);
    if (document) documents.set(id, document);
    else unknown.push(id);
  }
  for (const [id, document] of await readStore.getMany(collection, unknown, generation)) documents.set(id, document);
  const changed = new Map<string, ReadDocument>();
  const parked: NonNullable<ParkedChanges['parked']> = [];
  for (const event of relevant) {
    // Waits behind its stream's first parked event (the store counts it).
    if (parking?.streams.has(event.streamId)) {
      // Its error is told only if its stream's row is gone meanwhile (settled by a holder whose lease lapsed): the row made again says why.
      parked.push(parkedEventOf(event, 'it waits behind an earlier event of its stream, parked'));
      continue;
    }
    const id = idOf(event);
    const current = documents.get(id) ?? null;
    if (current && event.revision <= current.revision) continue; // already applied
    let next: ReadDocument;
    try {
      if (event.unreadable !== undefined) throw new Error(`it cannot be read: ${event.unreadable}`);
      next = projection.evolve(current, event);
    } catch (error) {
      if (!parking) throw new PoisonEventError(event.streamId, event.revision, error);
      parking.streams.add(event.streamId);
      parked.push(parkedEventOf(event, reasonOf(error)));
      parking.onParked?.(event, boundedError(reasonOf(error)));
      continue;
    }
    documents.set(id, next);
    changed.set(id, next);
  }
  const written = [...changed.values()];
  await readStore.commit(collection, written, { generation, position: batch.position }, parked.length > 0 ? { parked } : undefined);
  // An erasure appended since this fold began: a batch of this fold may have been opened before the
  // key went and written after the eraser's scrub and truncation (a rebuild running beside the
  // erasure, in any process), putting the values back in a generation and in the store's log.
  // Folded in order, such a batch came before this one: the record is scrubbed again and the log
  // truncated. An erasure from before the fold began needs none of it: its key was gone before this
  // fold opened any batch, so a rebuild of an old store pays nothing for its erasures.
  const erased = relevant.filter((e) => e.type === projection.erasure && comparePositions(e.position, began) > 0).map(idOf);
  if (erased.length > 0) await readStore.erase(collection, [...new Set(erased)]);
  return written;
}
