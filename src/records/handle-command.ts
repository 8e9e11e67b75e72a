import { v7 as timeOrderedUuid } from 'uuid';
import { AppendResult, DomainEvent, EventStore, NewEvent, NewEventMetadata, occurredAt, Position } from '../event-store/event-store.port';
import { currentVersion } from '../event-store/upcasting-event-store';
import { evolveRecord, Fields, RecordKind, RecordState, streamIdOf } from './record';

/**
 * The write path's core, in the spirit of Emmett's handleCommand: the record folded from its stream
 * (readRecord, or a fold kept from before), a pure decision on it, and its events appended at the
 * revision it was decided on (decideAndAppend). A writer that lost the race to another one gets
 * WrongExpectedRevisionError from the store and decides again on the stream as read: RecordWriter
 * wraps this core with that retry, a per-record turn, a cache of folds and snapshots.
 */

/** A record as its stream has it up to `revision` ('no_stream' before its first event), its last event at `position`. */
export interface Folded {
  state: RecordState | null;
  revision: number | 'no_stream';
  position?: Position;
  /** The last event's business time (occurredAt), in milliseconds: the next one is stamped no earlier. */
  lastAt?: number;
}

export const NO_STREAM: Folded = { state: null, revision: 'no_stream' };

/**
 * A decision on the record: the events to append ([] when nothing changes), or a refusal thrown
 * (src/errors.ts). Pure and synchronous: it may be made more than once.
 */
export type Decision<Event extends DomainEvent = DomainEvent> = (state: RecordState | null) => Event[];

/** Where an event's business time comes from: the host's clock in the service, a fixed one in tests. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/**
 * Event ids are UUIDs v7, ordered by time: the embedded store's unique index on them then grows at
 * its end, where a random id (v4) dirtied an index page of its own per event in each commit. Record
 * ids stay v4, as the contract says.
 */
export function withMetadata(events: DomainEvent[], metadata: NewEventMetadata): NewEvent[] {
  return events.map((e) => ({ id: timeOrderedUuid(), type: e.type, data: e.data, metadata }));
}

/** The record folded on from `known` (a fold kept from an earlier read or write) with the events after it. */
export async function readRecord(eventStore: EventStore, kind: RecordKind, id: string, known: Folded = NO_STREAM): Promise<Folded> {
  const events = await eventStore.readStream(streamIdOf(kind, id), known.revision === 'no_stream' ? 0 : known.revision + 1);
  if (events.length === 0) return known;
  let state = known.state;
  for (const event of events) state = evolveRecord(kind, state, event);
  const last = events[events.length - 1];
  return { state, revision: last.revision, position: last.position, lastAt: occurredAt(last).getTime() };
}

/** What a decision appended (null: it changed nothing), and the record as it left it. */
export interface Handled {
  appended: AppendResult | null;
  after: Folded;
  /** The id of the last event appended, if any. */
  lastEventId?: string;
}

/**
 * Decides on `folded` and appends what it decides at `folded.revision`, each event stamped with its
 * business time (`occurredAt`, from `clock`) as the decision is made: the write needs no read back
 * to know the record's times. Never earlier than the event before it: a stream's times stay in
 * order (as-of reads search them) whichever host's clock, or the store's for events stamped
 * before, set the one before. Throws the decision's refusal, or the store's failure (among them
 * WrongExpectedRevisionError when the stream moved on since `folded`).
 */
export async function decideAndAppend(
  eventStore: EventStore,
  kind: RecordKind,
  id: string,
  folded: Folded,
  decide: Decision,
  metadata: NewEventMetadata,
  clock: Clock,
): Promise<Handled> {
  const decided = decide(folded.state);
  if (decided.length === 0) return { appended: null, after: folded };
  const at = new Date(Math.max(clock().getTime(), folded.lastAt ?? -Infinity));
  const stamped = { ...metadata, occurredAt: at.toISOString() };
  // Each in the current shape of its type, and saying so.
  const events: NewEvent[] = decided.map(({ type, data }) => ({
    id: timeOrderedUuid(),
    type,
    data,
    metadata: { ...stamped, eventVersion: currentVersion(kind.upcasters, type) },
  }));
  const streamId = streamIdOf(kind, id);
  const appended = await eventStore.appendToStream(streamId, events, folded.revision);
  const { position } = appended;
  const first = appended.revision - events.length + 1;
  // Each event written out, not `{ ...event, streamId, ... }`: on Node 20 a spread followed by new
  // keys takes V8's slow path, paid for every key added, on every update.
  const state = events.reduce<RecordState | null>(
    (current, { id, type, data, metadata }, i) =>
      evolveRecord(kind, current, { id, type, data, metadata, streamId, revision: first + i, position, recordedAt: at }),
    folded.state,
  );
  return { appended, after: { state, revision: appended.revision, position, lastAt: at.getTime() }, lastEventId: events[events.length - 1].id };
}

/**
 * The Created event of a record moved in from another system (the CLI's import): stamped as
 * decideAndAppend stamps one, but its business time is the record's own creation time there, so
 * its `created`, history and as-of reads go by it; `metadata.imported` says who imported it, when
 * and from where. The first event of its stream: appended at 'no_stream'.
 */
export function importedCreation(kind: RecordKind, fields: Fields, created: Date, metadata: NewEventMetadata): NewEvent {
  const type = kind.events.created;
  return {
    id: timeOrderedUuid(),
    type,
    data: fields,
    metadata: { ...metadata, occurredAt: created.toISOString(), eventVersion: currentVersion(kind.upcasters, type) },
  };
}
