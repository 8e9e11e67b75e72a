import { DomainEvent, NewEventMetadata, occurredAt, StoredEvent, UnreadableEventError } from '../event-store/event-store.port';
import type { Upcaster, UpcasterChains } from '../event-store/upcasting-event-store';
import { notFound } from '../errors';
import type { ReadDocument } from '../read-store/read-store.port';

/** A record's field values as stored: every value is a string, '' meaning "no value". */
export type Fields = Record<string, string>;

/** What every kind of record shares (profiles, customers: src/record-kinds.ts): a stream per record and four event types. */
export interface RecordKind {
  /** `Profile`, `Customer`: the response wrapper key, the name in error messages; in lower case with an s, the collection (`/v1/profiles`). */
  label: string;
  /** Stream id prefix, `profile` for `profile-<uuid>`. */
  streamPrefix: string;
  events: { created: string; updated: string; deleted: string; erased: string };
  /** Its events' upcasters, by type (upcasting-event-store.ts): how each older shape reads now. */
  upcasters: UpcasterChains;
}

/**
 * Version 1 of a record event carried no business time: it reads as having happened when the store
 * recorded it. Version 2 carries `occurredAt`, stamped as its command was decided (handle-command.ts).
 * The recorded time is handed on as the store's Date (occurredAt reads either), so that no fold
 * parses back a string this step would have formatted.
 */
export const timeFromRecorded: Upcaster = (event) => {
  // A version 1 event that carries a stamp keeps it, if it is a time.
  const stamped = event.metadata.occurredAt;
  const occurredAt = typeof stamped === 'string' && !Number.isNaN(Date.parse(stamped)) ? stamped : event.recordedAt;
  return [{ ...event, metadata: { ...event.metadata, occurredAt } }];
};

/** The upcasters every kind's four event types share: version 1 to 2, timeFromRecorded. A kind adds its own steps after them. */
export const recordUpcasters = (events: RecordKind['events']): UpcasterChains =>
  Object.fromEntries(Object.values(events).map((type) => [type, { 1: timeFromRecorded }]));

/**
 * A record folded from its stream. The write side decides on it and the read models store it as
 * is, so one fold serves both. Deleted records keep their last state (a tombstone), so a replayed
 * event cannot bring them back; erased ones keep no field value (`erased` is the write side's).
 */
export type RecordState = ReadDocument & { erased?: boolean };

/** An event a record's fold cannot apply (a type it does not know, a change before the create): its stream reads as unreadable. */
export class UnfoldableEventError extends UnreadableEventError {
  constructor(event: { streamId: string; revision: number }, reason: string) {
    super(event.streamId, event.revision, reason);
    this.message = reason;
    this.name = 'UnfoldableEventError';
  }
}

/** A record's response view with the stream revision it shows, the ETag's value. */
export interface Versioned<View> {
  view: View;
  revision: number;
}

export const streamIdOf = (kind: RecordKind, id: string) => `${kind.streamPrefix}-${id}`;

/** The record id of one of the kind's stream ids (`streamIdOf` undone). */
export const recordIdOf = (kind: RecordKind, streamId: string) => streamId.slice(kind.streamPrefix.length + 1);

/** The payload of an event that carries no field values (Deleted, Erased). */
export type NoData = Record<string, never>;

/**
 * One feature's decisions, shaped like Emmett's deciders (@event-driven-io/emmett): `decide` answers
 * a command on the folded state with the events to append ([] when nothing changes) or throws the
 * refusal; `evolve` folds one event. Both pure. Unlike Emmett's, `evolve` takes the event as stored:
 * the fold keeps its stream, revision, account and time.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: StoredEvent<Event>): State;
  initialState(): State;
}

/** A stored event as a fold needs it: read back, or just appended (its schema version the store's to set). */
export type FoldedEvent = Omit<StoredEvent, 'metadata'> & { metadata: NewEventMetadata };

/**
 * Folds one event into a record. Created sets the fields, Updated merges the changed ones. Each
 * kind's decider evolves with it, and so do the read models, snapshots and history.
 */
export function evolveRecord(kind: RecordKind, state: RecordState | null, event: FoldedEvent): RecordState {
  switch (event.type) {
    case kind.events.created:
      return {
        id: recordIdOf(kind, event.streamId),
        accountId: event.metadata.accountId,
        revision: event.revision,
        seq: Number(event.position.commit),
        deleted: false,
        created: Math.floor(occurredAt(event).getTime() / 1000),
        fields: { ...(event.data as Fields) },
      };
    case kind.events.updated:
      if (!state) throw new UnfoldableEventError(event, `${event.type} before ${kind.events.created} in ${event.streamId}`);
      return { ...state, revision: event.revision, fields: { ...state.fields, ...(event.data as Fields) } };
    case kind.events.deleted:
      if (!state) throw new UnfoldableEventError(event, `${event.type} before ${kind.events.created} in ${event.streamId}`);
      return { ...state, revision: event.revision, deleted: true };
    case kind.events.erased:
      if (!state) throw new UnfoldableEventError(event, `${event.type} before ${kind.events.created} in ${event.streamId}`);
      return { ...state, revision: event.revision, deleted: true, erased: true, fields: {} };
    default:
      throw new UnfoldableEventError(event, `Unknown event type ${event.type} in ${event.streamId}`);
  }
}

/** The live record of this account, or NOT_FOUND: another account's record does not exist for you. */
export function ownedRecord(kind: RecordKind, state: RecordState | null, accountId: string): RecordState {
  if (!state || state.deleted || state.accountId !== accountId) throw notFound(kind.label);
  return state;
}

/**
 * Erasure takes a live or a deleted record of the account (another account's does not exist for
 * you); erasing an erased record again changes nothing.
 */
export function decideErasure(kind: RecordKind, state: RecordState | null, accountId: string): DomainEvent[] {
  if (!state || state.accountId !== accountId) throw notFound(kind.label);
  return state.erased ? [] : [{ type: kind.events.erased, data: {} }];
}

/** The fields whose value the update really changes; {} when it changes nothing. */
export function changedFields(current: Fields, update: Fields): Fields {
  const changes: Fields = {};
  for (const [field, value] of Object.entries(update)) {
    if ((current[field] ?? '') !== value) changes[field] = value;
  }
  return changes;
}

/** The fields that have a value: what a Created event holds. */
export function withoutEmpty(fields: Fields): Fields {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== ''));
}
