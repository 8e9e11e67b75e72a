import {
  ANY,
  AppendExpectedRevision,
  CancelledError,
  DeadlineExceededError,
  Filter,
  NO_STREAM,
  NotLeaderError,
  RecordedEvent,
  STREAM_NAME,
  StreamDeletedError,
  TimeoutError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import {
  EventMetadata,
  ExpectedRevision,
  Position,
  StoredEvent,
  StreamTombstonedError,
  UnreadableEventError,
  asUnreadable,
  WrongExpectedRevisionError,
} from './event-store.port';

/** The pure half of the EventStoreDB adapter: how the port's values and errors map to the client's. */

export function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'no_stream') return NO_STREAM;
  if (expected === 'any') return ANY;
  return BigInt(expected);
}

/** Stream revisions are uint64 on the server; the port counts them in numbers. */
export function fromEsdbRevision(revision: bigint): number {
  if (revision > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`Stream revision ${revision} is too large`);
  return Number(revision);
}

/**
 * The client's discovery that found no leader among the seeds' members (an election): a plain
 * Error (client 6.2.1 Client/discovery.ts line 78).
 */
const NO_LEADER_FOUND = /^Failed to discover after \d+ attempts/;
/** A call the client cancelled itself (grpc-js's details for a cancel()), as the client reports it. */
const CANCELLED_HERE = /Cancelled on client/;

/**
 * The client's errors that mean "the server is not there right now": retrying later can succeed.
 * A CancelledError here comes from the server (shutting down): the client drops its own cancellations.
 */
export function isTransientEsdbError(error: unknown): boolean {
  return (
    error instanceof UnavailableError ||
    error instanceof CancelledError ||
    error instanceof DeadlineExceededError ||
    error instanceof TimeoutError ||
    error instanceof NotLeaderError ||
    (error instanceof Error && NO_LEADER_FOUND.test(error.message))
  );
}

/**
 * Whether an append that failed so was not taken by the server, for sure: it said so (not the
 * leader; not ready or too busy, NotHandled in Streams.Append.cs v24.10.6 lines 110-116), the
 * client found no leader to send it to (discovery runs before the call: client 6.2.1
 * Client/index.ts lines 475-477), or it was never sent: grpc-js fails a call it has no connection
 * for at once, putting it on none (1.14 load-balancing-call.js lines 243-250). Any other failure
 * of an append (no answer in time, the connection lost or replaced) leaves its outcome unknown.
 */
export function appendNotTaken(error: unknown): boolean {
  return error instanceof NotLeaderError || (error instanceof Error && NOT_SENT_OR_TAKEN.some((said) => said.test(error.message)));
}
const NOT_SENT_OR_TAKEN = [/Server Is (Not Ready|Too Busy)$/, NO_LEADER_FOUND, /No connection established/];

/** The port's error for a client error: conflicts and unavailability get names; anything else is a bug. */
export function translateEsdbError(error: unknown, streamId?: string, expected?: ExpectedRevision): unknown {
  if (error instanceof WrongExpectedVersionError && streamId !== undefined && expected !== undefined) {
    const actual = error.actualVersion;
    return new WrongExpectedRevisionError(streamId, expected, actual === NO_STREAM ? 'no_stream' : fromEsdbRevision(actual));
  }
  // An append to a hard-deleted stream: the server refuses it as Deleted (KurrentDB v24.10.6
  // IndexWriter.cs lines 183-184, Streams.Append.cs lines 185-186), whatever it expected.
  if (error instanceof StreamDeletedError && streamId !== undefined) return new StreamTombstonedError(streamId);
  if (isTransientEsdbError(error)) return new StoreUnavailableError('EventStoreDB', (error as Error).message);
  // Cancelled by this side: only the adapter cancels a call, as it replaces or closes a client
  // (client 6.2.1 utils/CommandError.ts turns that status into an UnknownError).
  if (error instanceof UnknownError && CANCELLED_HERE.test(error.message)) {
    return new StoreUnavailableError('EventStoreDB', 'the call was cancelled as its connection was replaced or closed');
  }
  return error;
}

/**
 * A record the server writes into a stream of ours, with a type of its own (`$…`): the tombstone of
 * a hard-deleted stream (`$streamDeleted`, not JSON, at revision 2^63-1), which reads of $all return
 * until a scavenge (KurrentDB v24.10.4: LogRecord.cs lines 119-126, StorageWriterService.cs lines
 * 482-484, ReaderIndex/AllReader.cs lines 111-118).
 */
export const isServerRecord = (recorded: RecordedEvent): boolean => recorded.type.startsWith('$');

/**
 * The server's "end" position, 2^64-1 in either part (Position.End, and Position.FromInt64 of -1:
 * src/EventStore.Core/Services/Transport/Common/Position.cs v24.10.6 lines 21-26): an answer, never
 * the place of a record, whose positions are signed 64-bit offsets in the log.
 */
const END_OF_LOG = 2n ** 64n - 1n;
export const isEndOfLog = (position: Position): boolean => position.commit === END_OF_LOG || position.prepare === END_OF_LOG;

/** A recorded event's position in $all: reads of $all and of a stream give every event one. */
export function logPosition(recorded: RecordedEvent): Position {
  if (!recorded.position) throw new Error(`Event ${recorded.id} of ${recorded.streamId} came without a position`);
  return { commit: recorded.position.commit, prepare: recorded.position.prepare };
}

/**
 * Events of this service's streams are all JSON, written by the adapter with the port's metadata.
 * One that is not (written by hand) is unreadable: the client hands over data it cannot parse as
 * text, and metadata as bytes (client 6.2.1 utils/convertGrpcEvent.ts, safeParseJSON and
 * parseMetadata), which would otherwise be folded as if they were ours.
 */
export function toStoredEvent(recorded: RecordedEvent): StoredEvent {
  const revision = fromEsdbRevision(recorded.revision);
  const unreadable = (reason: string) => new UnreadableEventError(recorded.streamId, revision, reason);
  if (!recorded.isJson) throw unreadable('it is not JSON');
  if (!isObject(recorded.data)) throw unreadable('its data is not a JSON object');
  const metadata = recorded.metadata as unknown;
  if (!isObject(metadata) || typeof metadata.accountId !== 'string') throw unreadable('its metadata has no accountId');
  return {
    id: recorded.id,
    streamId: recorded.streamId,
    revision,
    position: logPosition(recorded),
    type: recorded.type,
    data: recorded.data,
    metadata: metadata as unknown as EventMetadata,
    recordedAt: recorded.created,
  };
}

/** As toStoredEvent, but one it cannot read comes as such (asUnreadable): a subscription goes on past it, for its subscriber to park. */
export function toSubscribedEvent(recorded: RecordedEvent): StoredEvent {
  try {
    return toStoredEvent(recorded);
  } catch (error) {
    if (!(error instanceof UnreadableEventError)) throw error;
    const { id, streamId, type, created: recordedAt } = recorded;
    return asUnreadable({ id, streamId, revision: error.revision, position: logPosition(recorded), type, recordedAt }, error.reason);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !ArrayBuffer.isView(value);

/**
 * A server-side filter for a catch-up subscription: the given stream prefixes, or else every stream
 * but the server's own (`$…`). Filtered-out events still move the position on through checkpoints,
 * sent every `checkpointInterval` × search window (32 events) scanned.
 */
export function subscriptionFilter(streamPrefixes: string[] | undefined, checkpointReached: NonNullable<Filter['checkpointReached']>): Filter {
  const common = { filterOn: STREAM_NAME, checkpointInterval: 1, checkpointReached } as const;
  return streamPrefixes?.length ? { ...common, prefixes: streamPrefixes } : { ...common, regex: '^[^$]' };
}

/**
 * Whether the filter above lets a stream's events through, decided here as the server does it
 * (prefixes and regex match the stream name): for reads of $all, which the client cannot filter.
 */
export function streamMatcher(streamPrefixes: string[] | undefined): (streamId: string) => boolean {
  return streamPrefixes?.length ? (streamId) => streamPrefixes.some((p) => streamId.startsWith(p)) : (streamId) => !streamId.startsWith('$');
}

/** Wait before trying again after the `attempt`-th failure in a row: 0.25 s doubling up to 10 s. */
export function retryDelayMs(attempt: number): number {
  return Math.min(250 * 2 ** Math.max(0, attempt - 1), 10_000);
}
