import { ConfigError } from '../../src/config/config';
import { reconnection } from '../../src/event-store/eventstoredb-clients';
import {
  ANY,
  CancelledError,
  convertToCommandError,
  DeadlineExceededError,
  NO_STREAM,
  NotLeaderError,
  RecordedEvent,
  StreamNotFoundError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
} from '@eventstore/db-client';
import { UnreadableEventError, WrongExpectedRevisionError } from '../../src/event-store/event-store.port';
import {
  fromEsdbRevision,
  isEndOfLog,
  isTransientEsdbError,
  retryDelayMs,
  streamMatcher,
  subscriptionFilter,
  toEsdbExpectedRevision,
  toStoredEvent,
  toSubscribedEvent,
  translateEsdbError,
} from '../../src/event-store/eventstoredb-mapping';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';

/** A client error, converted by the client itself from a gRPC failure (status code, trailers). */
const clientError = (code: number, details: string, trailers: Record<string, string> = {}) =>
  convertToCommandError(Object.assign(new Error(`${code} ${details}`), { code, details, metadata: { getMap: () => trailers } }));
const GRPC = { CANCELLED: 1, UNKNOWN: 2, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, UNAVAILABLE: 14 };

describe('EventStoreDB mapping', () => {
  it("maps expected revisions to the client's", () => {
    expect(toEsdbExpectedRevision('no_stream')).toBe(NO_STREAM);
    expect(toEsdbExpectedRevision('any')).toBe(ANY);
    expect(toEsdbExpectedRevision(0)).toBe(0n);
    expect(toEsdbExpectedRevision(41)).toBe(41n);
  });

  it('reads revisions back as numbers, refusing ones a number cannot hold exactly', () => {
    expect(fromEsdbRevision(0n)).toBe(0);
    expect(fromEsdbRevision(9_007_199_254_740_991n)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => fromEsdbRevision(9_007_199_254_740_992n)).toThrow(RangeError);
  });

  it("turns a wrong expected version into the port's conflict, with the actual revision", () => {
    const existing = new WrongExpectedVersionError(undefined, { streamName: 's', expected: 0n, current: 3n });
    const translated = translateEsdbError(existing, 's', 0);
    expect(translated).toBeInstanceOf(WrongExpectedRevisionError);
    expect(translated).toMatchObject({ streamId: 's', expected: 0, actual: 3 });
    const missing = new WrongExpectedVersionError(undefined, { streamName: 's', expected: 2n, current: NO_STREAM });
    expect(translateEsdbError(missing, 's', 2)).toMatchObject({ expected: 2, actual: 'no_stream' });
  });

  it('turns the errors of a missing server into StoreUnavailableError, and leaves others alone', () => {
    const transient = [
      clientError(GRPC.UNAVAILABLE, 'No connection established'),
      clientError(GRPC.DEADLINE_EXCEEDED, 'Deadline exceeded'),
      clientError(GRPC.CANCELLED, 'Server shutting down'),
      clientError(GRPC.NOT_FOUND, 'Leader info available', { exception: 'not-leader', 'leader-endpoint-host': 'h', 'leader-endpoint-port': '2113' }),
    ];
    expect(transient.map((e) => e.constructor)).toEqual([UnavailableError, DeadlineExceededError, CancelledError, NotLeaderError]);
    for (const error of transient) {
      expect(isTransientEsdbError(error)).toBe(true);
      const translated = translateEsdbError(error);
      expect(translated).toBeInstanceOf(StoreUnavailableError);
      expect((translated as Error).message).toBe(`EventStoreDB is unreachable: ${error.message}`);
    }
    const other = clientError(GRPC.NOT_FOUND, 'Stream not found', { exception: 'stream-not-found', 'stream-name': 's' });
    expect(other).toBeInstanceOf(StreamNotFoundError);
    expect(isTransientEsdbError(other)).toBe(false);
    expect(translateEsdbError(other)).toBe(other);
    const bug = new TypeError('bug');
    expect(translateEsdbError(bug)).toBe(bug);
  });

  it('takes an append the server did not handle (starting, overloaded) as unavailable, and an unknown status as a bug', () => {
    // Thrown as UNAVAILABLE with only a message (KurrentDB v24.10.6 Streams.Append.cs lines 110-113,
    // RpcExceptions.cs lines 16-20).
    for (const reason of ['Server Is Not Ready', 'Server Is Too Busy']) {
      const error = clientError(GRPC.UNAVAILABLE, reason);
      expect(isTransientEsdbError(error)).toBe(true);
      expect(translateEsdbError(error)).toBeInstanceOf(StoreUnavailableError);
    }
    const other = clientError(GRPC.UNKNOWN, 'Unexpected OperationResult: 42');
    expect(other).toBeInstanceOf(UnknownError);
    expect(isTransientEsdbError(other)).toBe(false);
    expect(translateEsdbError(other)).toBe(other);
  });

  it("takes the client's discovery finding no leader (an election) as unavailable, not as a bug", () => {
    const noLeader = new Error('Failed to discover after 10 attempts.');
    expect(isTransientEsdbError(noLeader)).toBe(true);
    expect(translateEsdbError(noLeader)).toBeInstanceOf(StoreUnavailableError);
  });

  it('takes a call cancelled on this side (a client replaced or closed) as unavailable, not as a bug', () => {
    // grpc-js's status for its own cancel(), which the client turns into an UnknownError.
    const cancelled = clientError(GRPC.CANCELLED, 'Cancelled on client');
    expect(cancelled).toBeInstanceOf(UnknownError);
    const translated = translateEsdbError(cancelled, 'customer-1', 'no_stream');
    expect(translated).toBeInstanceOf(StoreUnavailableError);
    expect((translated as Error).message).toBe('EventStoreDB is unreachable: the call was cancelled as its connection was replaced or closed');
  });

  const recorded = (over: Partial<RecordedEvent> = {}) =>
    ({
      streamId: 'customer-1',
      id: 'c0a8e2f4-0000-4000-8000-000000000001',
      isJson: true,
      revision: 4n,
      type: 'CustomerUpdated',
      created: new Date('2026-01-02T03:04:05Z'),
      data: { name: 'Ada' },
      metadata: { accountId: 'acc', correlationId: 'r', causationId: 'c', schemaVersion: 1 },
      position: { commit: 18446744073709551000n, prepare: 18446744073709550999n },
      ...over,
    }) as RecordedEvent;

  it("maps a recorded event to the port's, positions kept exactly", () => {
    expect(toStoredEvent(recorded())).toEqual({
      id: 'c0a8e2f4-0000-4000-8000-000000000001',
      streamId: 'customer-1',
      revision: 4,
      position: { commit: 18446744073709551000n, prepare: 18446744073709550999n },
      type: 'CustomerUpdated',
      data: { name: 'Ada' },
      metadata: { accountId: 'acc', correlationId: 'r', causationId: 'c', schemaVersion: 1 },
      recordedAt: new Date('2026-01-02T03:04:05Z'),
    });
  });

  it('refuses events this service cannot have written, naming them', () => {
    // As the client hands them over: data it cannot parse as text, metadata it cannot parse as bytes.
    const unreadable = [
      [recorded({ isJson: false }), 'it is not JSON'],
      [recorded({ data: 'name=Ada' as never }), 'its data is not a JSON object'],
      [recorded({ metadata: new Uint8Array([1, 2]) as never }), 'its metadata has no accountId'],
      [recorded({ metadata: undefined as never }), 'its metadata has no accountId'],
    ] as const;
    for (const [event, reason] of unreadable) {
      const error = (() => {
        try {
          toStoredEvent(event);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(UnreadableEventError);
      expect(error).toMatchObject({ streamId: 'customer-1', revision: 4, reason });
    }
    expect(() => toStoredEvent(recorded({ position: undefined }))).toThrow(/without a position/);
    // A subscription goes on past such an event: it hands it over as unreadable, for its subscriber to park.
    for (const [event, reason] of unreadable) {
      expect(toSubscribedEvent(event)).toMatchObject({ streamId: 'customer-1', revision: 4, type: event.type, data: {}, unreadable: reason });
    }
    expect(toSubscribedEvent(recorded())).toEqual(toStoredEvent(recorded()));
  });

  it("filters a subscription by stream prefixes, or else leaves out only the server's own streams", () => {
    const onCheckpoint = () => undefined;
    expect(subscriptionFilter(['customer-', 'profile-'], onCheckpoint)).toMatchObject({ prefixes: ['customer-', 'profile-'] });
    expect(subscriptionFilter(['customer-'], onCheckpoint)).toEqual({
      filterOn: 'streamName',
      checkpointInterval: 1,
      checkpointReached: onCheckpoint,
      prefixes: ['customer-'],
    });
    const all = subscriptionFilter(undefined, onCheckpoint) as { regex: string };
    const regex = new RegExp(all.regex);
    expect(regex.test('customer-1')).toBe(true);
    expect(regex.test('$stats-127.0.0.1:2113')).toBe(false);
  });

  it('matches on our side the streams the server-side filter lets through', () => {
    const all = new RegExp((subscriptionFilter(undefined, () => undefined) as { regex: string }).regex);
    for (const streamId of ['customer-1', 'profile-1', 'idempotency-x', '$stats-127.0.0.1:2113', '$ce-customer']) {
      expect(streamMatcher(undefined)(streamId)).toBe(all.test(streamId));
      expect(streamMatcher(['customer-'])(streamId)).toBe(streamId.startsWith('customer-'));
      expect(streamMatcher(['customer-', 'profile-'])(streamId)).toBe(streamId.startsWith('customer-') || streamId.startsWith('profile-'));
    }
  });

  it("tells the server's end-of-log marker (2^64-1 in either part) from any place in the log", () => {
    const end = 2n ** 64n - 1n;
    expect(isEndOfLog({ commit: end, prepare: end })).toBe(true);
    expect(isEndOfLog({ commit: end, prepare: 5n })).toBe(true);
    expect(isEndOfLog({ commit: 2n ** 63n - 1n, prepare: 2n ** 63n - 1n })).toBe(false);
    expect(isEndOfLog({ commit: 0n, prepare: 0n })).toBe(false);
  });

  it('backs off from a quarter second, doubling, up to ten seconds', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(retryDelayMs)).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  });
});

describe('EventStoreDB reconnection settings', () => {
  it('makes no new client for one host and no discovery: it would reach the same node', () => {
    expect(reconnection('esdb://localhost:2113?tls=false', 5000)).toEqual({ connectionString: 'esdb://localhost:2113?tls=false', discoveryMs: 0 });
  });

  it('bounds the gossip timeout so that asking every seed once fits in STORE_TIMEOUT_MS', () => {
    // The client's default is 5 s per seed (client 6.2.1 Client/discovery.ts line 23): one black-holed seed used up the whole deadline.
    const seeds = reconnection('esdb://a:2113,b:2113,c:2113?tls=false', 5000);
    expect(seeds).toMatchObject({ connectionString: 'esdb://a:2113,b:2113,c:2113?tls=false&gossipTimeout=1', discoveryMs: 3000 });
    expect(seeds.newClient).toBeDefined();
    expect(reconnection('esdb+discover://cluster.example:2113', 5000)).toMatchObject({
      connectionString: 'esdb+discover://cluster.example:2113?gossipTimeout=4',
      discoveryMs: 4000,
    });
    expect(reconnection('esdb://a:2113,b:2113?gossipTimeout=2', 5000)).toMatchObject({
      connectionString: 'esdb://a:2113,b:2113?gossipTimeout=2',
      discoveryMs: 4000,
    });
  });

  it('refuses a gossip timeout, or a STORE_TIMEOUT_MS, with which discovery would use up a call', () => {
    expect(() => reconnection('esdb://a:2113,b:2113?gossipTimeout=5', 5000)).toThrow(ConfigError);
    expect(() => reconnection('esdb://a:2113,b:2113,c:2113', 2000)).toThrow(ConfigError);
  });
});
