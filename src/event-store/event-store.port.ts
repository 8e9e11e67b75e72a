/**
 * The event store port: what the write side and the projectors need from an event store.
 * Adapters: SQLite (embedded default) and EventStoreDB. Nothing outside the adapters imports a
 * driver; their failures to reach a server surface as StoreUnavailableError.
 */
/**
 * A place in the store's global order. SQLite uses its sequence number for both parts; EventStoreDB
 * its commit and prepare positions in the transaction log.
 */
export interface Position {
  commit: bigint;
  prepare: bigint;
}

export const START: Position = { commit: -1n, prepare: -1n };

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

export interface EventMetadata {
  accountId: string;
  correlationId: string;
  causationId: string;
  /** How to read the event's data; the store that writes it sets it (see SEALED_SCHEMA_VERSION). */
  schemaVersion: number;
  /** The W3C trace context of the request that appended it, when traces are exported: the projectors' and the feed's spans link to it. */
  traceparent?: string;
  /**
   * A record event's business time: stamped as its command was decided (handle-command.ts), so a
   * write knows it without reading its event back, and stored as ISO-8601 UTC with milliseconds.
   * Events stored before it was stamped have none: their upcaster (records/record.ts,
   * timeFromRecorded) gives them the time the store recorded, as the store's `Date`, which
   * serializes as that same string. Read it with occurredAt, which takes either.
   */
  occurredAt?: string | Date;
  /** The version of its type's shape it was written in (upcasting-event-store.ts); none is version 1. */
  eventVersion?: number;
  /** On the Created event of a record moved in by the CLI's import: who ran it, when, from which file (history and the feed show it). */
  imported?: ImportedBy;
}

/** A record's import, as its Created event carries it. Its business time (occurredAt) is the record's own creation time. */
export interface ImportedBy {
  /** The operating-system user who ran the import. */
  by: string;
  /** When the import stored it (real time), ISO-8601 UTC with milliseconds. */
  at: string;
  /** The name of the file it came from. */
  file: string;
}

/** An event's data as written before encryption: its field values in plaintext. */
export const PLAINTEXT_SCHEMA_VERSION = 1;
/** An event's data sealed with its record's data key (src/sealing/). */
export const SEALED_SCHEMA_VERSION = 2;

/** A write or read needed the data key of a record that has been erased: the record does not exist any more. */
export class RecordErasedError extends Error {
  constructor(readonly keyId: string) {
    super(`${keyId} has been erased`);
    this.name = 'RecordErasedError';
  }
}

/** An event as the domain produces it: plain typed data. */
export interface DomainEvent<Type extends string = string, Data = Record<string, unknown>> {
  type: Type;
  data: Data;
}

export interface NewEvent extends DomainEvent {
  id: string;
  metadata: NewEventMetadata;
}

/** A new event's metadata: its schemaVersion is for the store that writes it to set. */
export type NewEventMetadata = Omit<EventMetadata, 'schemaVersion'> & Partial<Pick<EventMetadata, 'schemaVersion'>>;

/** A new event's metadata as an adapter stores it: without a version, nothing sealed it, so it is plaintext. */
export const storedMetadata = (metadata: NewEventMetadata): EventMetadata =>
  metadata.schemaVersion === undefined ? { ...metadata, schemaVersion: PLAINTEXT_SCHEMA_VERSION } : (metadata as EventMetadata);

export interface StoredEvent<E extends DomainEvent = DomainEvent> {
  id: string;
  streamId: string;
  /** 0 for a stream's first event. */
  revision: number;
  position: Position;
  type: E['type'];
  data: E['data'];
  metadata: EventMetadata;
  recordedAt: Date;
  /**
   * Set only on an event a subscription hands over though it cannot be read (asUnreadable): why. Its
   * data is {}. A subscription goes on past it, so that the subscriber parks it (see
   * projections/fold-batch.ts) or stops on it; a read of its stream throws UnreadableEventError.
   */
  unreadable?: string;
}

/** An event a subscription cannot read, as it hands it over: its place and type, no data, and its metadata when that could be read. */
export const asUnreadable = (event: Omit<StoredEvent, 'data' | 'metadata'> & { metadata?: EventMetadata }, reason: string): StoredEvent => ({
  ...event,
  data: {},
  metadata: event.metadata ?? { accountId: '', correlationId: '', causationId: '', schemaVersion: PLAINTEXT_SCHEMA_VERSION },
  unreadable: reason,
});

/**
 * When a record event happened, as the record's history and times tell it: its business time, a
 * new Date from the stamp or from the upcaster's Date alike. Every record event read through the
 * service's store carries it (stamped as decided, or by the upcaster of the events stored before:
 * records/record.ts, timeFromRecorded).
 */
export const occurredAt = (event: { metadata: { occurredAt?: string | Date } }): Date => new Date(event.metadata.occurredAt!);

/** What the appender believes the stream's last revision is. */
export type ExpectedRevision = 'no_stream' | 'any' | number;

export interface AppendResult {
  /** Revision of the last event appended. */
  revision: number;
  /** Global position of the last event appended. */
  position: Position;
}

/** One stream's part of appendToStreams: what appendToStream takes. */
export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  expected: ExpectedRevision;
}

/** What became of one append of appendToStreams: its result, or what appendToStream would have thrown for it alone. */
export type AppendOutcome = { result: AppendResult } | { error: unknown };

export interface EventBatch {
  events: StoredEvent[];
  /** Where a subscriber has got to after this batch (its next checkpoint). */
  position: Position;
}

export interface SubscribeOptions {
  signal: AbortSignal;
  /** Largest batch handed to the subscriber at once. */
  maxBatchSize?: number;
  /**
   * Only events of streams whose id starts with one of these (none: every stream). Batches may then
   * hold no event at all: they still move the position on, so a subscriber following quiet streams
   * keeps up with the store.
   */
  streamPrefixes?: string[];
  /**
   * false: the events' data as the store holds it, values sealed (see SealedEventStore), for a
   * subscriber that reads none (the change feed's index); opening them would be wasted. Default true.
   */
  values?: boolean;
}

/** The stream's revision did not match the expected one: another writer got there first. */
export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`Stream ${streamId}: expected revision ${String(expected)}, found ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The stream was deleted for good on the server (by hand: the service never deletes one), so it can
 * never be written again: its record reads as never written, yet cannot be created or changed. A
 * conflict the caller cannot resolve (409, saying so), not a 500.
 */
export class StreamTombstonedError extends Error {
  constructor(readonly streamId: string) {
    super(`This record was deleted from the event store (stream ${streamId}) and cannot be written again.`);
    this.name = 'StreamTombstonedError';
  }
}

/**
 * An event in one of the service's streams that the service did not write and cannot read: not
 * JSON, or without the port's metadata (written to the store by hand). A projection stops on it
 * as on any event it cannot fold.
 */
export class UnreadableEventError extends Error {
  constructor(
    readonly streamId: string,
    readonly revision: number,
    readonly reason: string,
  ) {
    super(`Event ${streamId}@${revision} cannot be read: ${reason}`);
    this.name = 'UnreadableEventError';
  }
}

export interface EventStore {
  /** Appends atomically, or throws WrongExpectedRevisionError. Resolves once durable. */
  appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /**
   * Many appends at once (a bulk import's batch: many new streams), each atomic on its own stream
   * and checked against its own expected revision, as appendToStream would: one refused leaves the
   * others. Resolves once every one stored is durable, with each one's outcome in order. SQLite
   * stores them in one transaction; a server store sends a bounded number at a time.
   */
  appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]>;
  /**
   * A stream's events in revision order, from `fromRevision` (default 0) on, at most `maxCount` of
   * them (default all); [] when the stream does not exist or has no event that far. A read costs
   * the events it returns, not the stream's length.
   */
  readStream(streamId: string, fromRevision?: number, maxCount?: number): Promise<StoredEvent[]>;
  /** A stream's last event (its revision + 1 is the stream's length), or null when the stream does not exist. */
  readLastEvent(streamId: string): Promise<StoredEvent | null>;
  /**
   * Position of the newest event a subscription delivers (the store's own bookkeeping streams
   * left out), or START when there is none.
   */
  headPosition(): Promise<Position>;
  /**
   * How many events lie after `from` up to `to`, or null when the store's positions cannot say
   * (EventStoreDB's are byte offsets in its log): lag is a count of events or unknown, never bytes.
   */
  eventsBetween(from: Position, to: Position): number | null;
  /**
   * Every event after `from` in global order, in batches, then new ones as they are appended,
   * until the signal aborts.
   */
  subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch>;
  close(): Promise<void>;
}

export const EVENT_STORE = Symbol('EventStore');
