import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { append } from '@eventstore/db-client/dist/streams/appendToStream/append';
import {
  AllStreamResolvedEvent,
  AllStreamSubscription,
  BACKWARDS,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  jsonEvent,
  ReadStreamOptions,
  ResolvedEvent,
  START as ESDB_START,
  StreamDeletedError,
  StreamingRead,
  StreamNotFoundError,
} from '@eventstore/db-client';
import { ConfigError } from '../config/config';
import { EsdbClients, reconnection } from './eventstoredb-clients';
import { headOf, LogEntry, pastSubscription } from './eventstoredb-log-end';
import { appendEach } from './append-each';
import { StoreUnavailableError, WriteOutcomeUnknownError } from '../storage/store-unavailable.error';
import {
  AppendResult,
  comparePositions,
  EventBatch,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  START,
  storedMetadata,
  StoredEvent,
  SubscribeOptions,
} from './event-store.port';
import {
  appendNotTaken,
  fromEsdbRevision,
  isEndOfLog,
  isServerRecord,
  isTransientEsdbError,
  logPosition,
  retryDelayMs,
  streamMatcher,
  subscriptionFilter,
  toEsdbExpectedRevision,
  toStoredEvent,
  toSubscribedEvent,
  translateEsdbError,
} from './eventstoredb-mapping';

const DEFAULT_BATCH = 1000;
/** Tries of an append or a read: a leader change takes two (the deposed node fails the call, then names the leader). */
const ATTEMPTS = 3;
/** How long a confirmed subscription may stay silent before the head is read to see whether it is stuck. */
const DEFAULT_SILENCE_MS = 10_000;
/**
 * Every call goes to the leader: a follower may lag behind it (reads, the head, subscriptions) or
 * may have lost its cluster. Elsewhere the server answers NotLeader naming the leader, and the
 * client reconnects to it, so a call tried again reaches it.
 */
const ON_LEADER = { requiresLeader: true } as const;
/** How an append answers when the node has no leader (lost its cluster, or starting). */
const NOT_READY = /Server Is Not Ready$/;

/** Put in the subscription's own output by its checkpointReached callback, so it stays in order with the events. */
type CheckpointMarker = { checkpoint: Position };

/**
 * Event store on EventStoreDB (client 6.x). Appends carry the port's event ids as EventStoreDB event
 * ids, so the server recognises a re-sent append as the same one. Subscriptions are catch-up
 * subscriptions to $all, filtered on the server by stream prefix and read with `for await`, one
 * message at a time; they resubscribe with backoff from the last position delivered when the server
 * goes away.
 *
 * Every call is bounded by `deadlineMs` here, not by the client: its reads and subscriptions run
 * with no deadline whatever is passed, and an append's gRPC deadline starts only once the client
 * has found a node to send it to.
 *
 * A subscription can also fall silent for good without failing: a node that lost its cluster
 * keeps the call open, and the client keeps a started call when it reconnects elsewhere. So one
 * silent for `silenceMs` while an event of its own lies past it (read from the leader) is dropped
 * and renewed. A client whose call went unanswered is replaced, so that it finds the leader again
 * (see EsdbClients).
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly logger = new Logger('EventStoreDB');
  private readonly clients: EsdbClients;

  /**
   * @param deadlineMs how long one call may wait for the server before it fails as unavailable
   * @param silenceMs how long a subscription may hear nothing before the log past it is checked
   * @param newClient a new client for the same connection string, used when the current one is stuck on a node
   * @param discoveryMs how long a new client may take to find the leader: it is not replaced before
   */
  constructor(
    client: EventStoreDBClient,
    private readonly deadlineMs: number,
    private readonly silenceMs = DEFAULT_SILENCE_MS,
    newClient?: () => EventStoreDBClient,
    discoveryMs = 0,
  ) {
    this.clients = new EsdbClients(client, newClient, Math.max(deadlineMs, discoveryMs), this.logger);
  }

  private get client(): EventStoreDBClient {
    return this.clients.current;
  }

  /**
   * A client for the connection string, once the server has answered a read within `timeoutMs`:
   * a wrong or unreachable server stops the start with a clear error rather than a hang.
   */
  static async connect(connectionString: string, timeoutMs: number, silenceMs = DEFAULT_SILENCE_MS): Promise<EventStoreDbEventStore> {
    const again = reconnection(connectionString, timeoutMs);
    let client: EventStoreDBClient;
    try {
      client = EventStoreDBClient.connectionString(again.connectionString);
    } catch (error) {
      throw new ConfigError(`EVENTSTORE_CONNECTION_STRING cannot be parsed: ${(error as Error).message}`);
    }
    const store = new EventStoreDbEventStore(client, timeoutMs, silenceMs, again.newClient, again.discoveryMs);
    try {
      // Bounded like every call, cluster discovery (esdb+discover://) included.
      await store.headPosition();
    } catch (error) {
      await store.close();
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError('EventStoreDB', (error as Error).message);
    }
    return store;
  }

  /**
   * Sent through the client's `append` (one Streams.Append call per append), not its
   * appendToStream, which sends over one batch-append stream per client whose pending answers sit
   * in one table for all clients (client 6.2.1 streams/appendToStream/batchAppend.ts lines 32-35):
   * a replaced client's stream failing rejected the current client's appends, and the answer its
   * server then sent for one threw in a grpc-js listener, ending the process. appendToStream also
   * first asks the server for its features, a call with no deadline (appendToStream/index.ts lines
   * 59-68). A call of its own keeps its own answer, under a gRPC deadline. `append` is a module of
   * the client's, not its public API: package.json pins the client's version.
   */
  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('appendToStream needs at least one event');
    const data = events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: { ...storedMetadata(e.metadata) } }));
    const expectedRevision = toEsdbExpectedRevision(expected);
    // Once an attempt may have been stored, so may the append, whatever the later ones answer.
    let maybeStored = false;
    for (let attempt = 1; ; attempt++) {
      const client = this.client;
      let result;
      try {
        // batchAppendSize: asked for by the type, unused by `append`.
        const call = append.call(client, streamId, data, { expectedRevision, batchAppendSize: 0, deadline: this.deadlineMs, ...ON_LEADER });
        const leave = this.clients.enter(client);
        call.then(leave, leave);
        result = await this.withinDeadline(call, () => this.replaceClient(client, `an append left unanswered for ${this.deadlineMs} ms`));
      } catch (error) {
        // A node with no leader answers "not ready". The client looks for the leader again for its
        // next call, but the subscriptions on that node stay there, silent: a new client moves them too.
        if (NOT_READY.test((error as Error).message)) this.replaceClient(client, `an append answered "${(error as Error).message}"`);
        // A lost answer may hide a write that landed: sending the same event ids again at the same
        // expected revision is idempotent on the server, so a retry cannot store the events twice.
        // A call that used up its deadline is not retried: the caller has waited long enough.
        const spent = error instanceof DeadlineExceededError;
        if (spent) this.replaceClient(client, `an append left unanswered for ${this.deadlineMs} ms`);
        maybeStored ||= !appendNotTaken(error);
        if (spent || !isTransientEsdbError(error) || attempt === ATTEMPTS) throw appendFailure(error, streamId, expected, maybeStored);
        await sleep(retryDelayMs(attempt));
        continue;
      }
      // The server leaves the position out when it recognised the append as one it already stored.
      const position =
        result.position ??
        (await this.positionOf(streamId, result.nextExpectedRevision).catch((error) => {
          throw error instanceof StoreUnavailableError ? new WriteOutcomeUnknownError(error) : error;
        }));
      return { revision: fromEsdbRevision(result.nextExpectedRevision), position };
    }
  }

  /** APPENDS_AT_ONCE appends under way at a time, each a call of its own. */
  readonly appendToStreams: EventStore['appendToStreams'] = (appends) => appendEach(appends, (...append) => this.appendToStream(...append));

  async readStream(streamId: string, fromRevision = 0, maxCount?: number): Promise<StoredEvent[]> {
    return this.readEvents(streamId, { fromRevision: BigInt(fromRevision), ...(maxCount === undefined ? {} : { maxCount }) });
  }

  /** One event read backwards from the stream's end: the server reads no other. */
  async readLastEvent(streamId: string): Promise<StoredEvent | null> {
    const [last] = await this.readEvents(streamId, { fromRevision: END, direction: BACKWARDS, maxCount: 1 });
    return last ?? null;
  }

  private async readEvents(streamId: string, options: ReadStreamOptions): Promise<StoredEvent[]> {
    try {
      return await this.retried(async (client) => {
        const events: StoredEvent[] = [];
        await this.eachEvent(client, client.readStream(streamId, { ...options, ...ON_LEADER }), (resolved) => {
          if (resolved.event) events.push(toStoredEvent(resolved.event));
        });
        return events;
      });
    } catch (error) {
      // A stream deleted on the server (by hand: the service never deletes one) holds no record, as one never written.
      if (error instanceof StreamNotFoundError || error instanceof StreamDeletedError) return [];
      throw translateEsdbError(error);
    }
  }

  /**
   * The last event of a stream not the server's own (`$…`): where a subscription without prefix
   * ends. The log is read backwards a page at a time, past the server's own events at its end.
   */
  async headPosition(): Promise<Position> {
    try {
      return await this.retried((client) => headOf((from, maxCount) => this.readBackwards(client, from, maxCount)));
    } catch (error) {
      throw translateEsdbError(error);
    }
  }

  /** A page of the log read backwards on `client`, for the searches of its end (eventstoredb-log-end.ts). */
  private async readBackwards(client: EventStoreDBClient, from: Position | 'end', maxCount: number): Promise<LogEntry[]> {
    const page: LogEntry[] = [];
    const fromPosition = from === 'end' ? END : from;
    await this.eachEvent(client, client.readAll({ direction: BACKWARDS, fromPosition, maxCount, ...ON_LEADER }), ({ event }) => {
      if (event?.position)
        page.push({ streamId: event.streamId, revision: event.revision, position: { commit: event.position.commit, prepare: event.position.prepare } });
    });
    return page;
  }

  /** Unknown: positions are byte offsets in the server's log, not event counts. */
  eventsBetween(): null {
    return null;
  }

  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    const { signal } = options;
    const maxBatchSize = options.maxBatchSize ?? DEFAULT_BATCH;
    let position = from;
    if (isEndOfLog(from)) {
      // A checkpoint stored before such checkpoints were ignored (see below): where it was is unknown.
      this.logger.error(`Position ${from.commit}/${from.prepare} is the server's end-of-log marker, not a place in the log: folding again from the start`);
      position = START;
    }
    let failures = 0;
    const matches = streamMatcher(options.streamPrefixes);
    while (!signal.aborted) {
      const client = this.client;
      const leave = this.clients.enter(client);
      const subscription = client.subscribeToAll(
        {
          fromPosition: comparePositions(position, START) === 0 ? ESDB_START : position,
          filter: subscriptionFilter(options.streamPrefixes, (sub, checkpoint) => {
            sub.push({ checkpoint } satisfies CheckpointMarker);
          }),
          ...ON_LEADER,
        },
        // The batch below ends when the stream's buffer is empty: it must be able to hold a full one.
        { highWaterMark: maxBatchSize },
      );
      // Destroying the stream ends the `for await` below at once, wherever it is waiting.
      const stop = () => subscription.destroy();
      signal.addEventListener('abort', stop, { once: true });
      // The server confirms a subscription at once; one that stays silent is resubscribed.
      const unconfirmed = setTimeout(() => {
        this.replaceClient(client, `a subscription left unconfirmed for ${this.deadlineMs} ms`);
        subscription.destroy(new StoreUnavailableError('EventStoreDB', `no subscription confirmation within ${this.deadlineMs} ms`));
      }, this.deadlineMs);
      let batchPosition = position;
      const watchdog = this.watch(subscription, () =>
        this.retried((client) => pastSubscription((from, maxCount) => this.readBackwards(client, from, maxCount), batchPosition, matches)),
      );
      subscription.once('confirmation', () => {
        clearTimeout(unconfirmed);
        watchdog.arm();
      });
      try {
        let events: StoredEvent[] = [];
        for await (const message of subscription as AsyncIterable<AllStreamResolvedEvent | CheckpointMarker>) {
          watchdog.pause();
          clearTimeout(unconfirmed);
          failures = 0;
          if ('checkpoint' in message) {
            // Servers 24.10.0 to 24.10.4 send the end marker as a filtered subscription's checkpoint
            // when nothing matched before it went live; stored, the next subscription would start
            // at the live end and skip what it missed. Any other checkpoint is a place in the log,
            // even one past the end of a lagging node's log.
            if (isEndOfLog(message.checkpoint)) {
              this.logger.warn(`Ignored the server's end-of-log marker as a checkpoint (${message.checkpoint.commit}/${message.checkpoint.prepare})`);
            } else if (comparePositions(message.checkpoint, batchPosition) > 0) {
              batchPosition = message.checkpoint;
            }
          } else if (message.event && isServerRecord(message.event)) {
            // Not an event of this service: it only moves the position on.
            batchPosition = logPosition(message.event);
          } else if (message.event) {
            const event = toSubscribedEvent(message.event);
            events.push(event);
            batchPosition = event.position;
          }
          // Hand over what has arrived once nothing more is waiting in the stream, or the batch is full.
          if (isDrained(subscription) || events.length >= maxBatchSize) {
            if (events.length > 0 || comparePositions(batchPosition, position) > 0) {
              yield { events, position: batchPosition };
              position = batchPosition;
            }
            events = [];
          }
          watchdog.arm();
        }
        if (signal.aborted) return;
        failures += 1;
        // A replaced client's disposal cancels its subscriptions, which end as if the server ended them.
        const why = client === this.client ? 'ended by the server' : 'ended with the connection it was on';
        this.logger.warn(`Subscription ${why}; resubscribing in ${retryDelayMs(failures)} ms`);
      } catch (error) {
        if (signal.aborted) return;
        const replaced = client !== this.client;
        if (!replaced && !(error instanceof StoreUnavailableError) && !isTransientEsdbError(error)) throw translateEsdbError(error);
        failures += 1;
        this.logger.warn(`Subscription lost (${(error as Error).message}); resubscribing in ${retryDelayMs(failures)} ms`);
      } finally {
        clearTimeout(unconfirmed);
        watchdog.pause();
        signal.removeEventListener('abort', stop);
        // Not awaited: with the server gone, cancelling could wait on a reconnection.
        void subscription.unsubscribe().catch(() => undefined);
        leave();
      }
      // At once when the signal aborts.
      await sleep(retryDelayMs(failures), undefined, { signal }).catch(() => undefined);
    }
  }

  /** Bounded too: the client waits for every call it has open to finish, and one may never. */
  async close(): Promise<void> {
    await this.clients.close((dispose) => this.withinDeadline(dispose).catch((error: Error) => this.logger.warn(`Closing: ${error.message}`)));
  }

  /**
   * Fails `subscription` as unavailable once it has heard nothing for silenceMs and `behind` says
   * why it is behind, or fails. Armed while the subscription is waited on; paused while a message
   * is handled, so a batch being folded is not taken for silence.
   */
  private watch(subscription: AllStreamSubscription, behind: () => Promise<string | null>): { arm(): void; pause(): void } {
    let timer: NodeJS.Timeout | undefined;
    // Moved on by every arm and pause: a check that ends after one decides nothing.
    let turn = 0;
    const check = async (mine: number) => {
      const why = await behind().catch((error: Error) => `the log past it cannot be read (${error.message})`);
      if (mine !== turn) return;
      if (why === null) {
        this.logger.debug(`Subscription silent for ${this.silenceMs} ms with nothing of its own past it: kept`);
        return arm();
      }
      subscription.destroy(new StoreUnavailableError('EventStoreDB', `subscription silent for ${this.silenceMs} ms while ${why}`));
    };
    const pause = () => {
      clearTimeout(timer);
      turn += 1;
    };
    const arm = () => {
      pause();
      const mine = turn;
      timer = setTimeout(() => void check(mine), this.silenceMs);
    };
    return { arm, pause };
  }

  /**
   * A read on the current client, tried again when the server failed it for now or named another
   * leader (the client reconnects to it meanwhile), or when the client was replaced under it.
   */
  private async retried<T>(read: (client: EventStoreDBClient) => Promise<T>): Promise<T> {
    let cutShort = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        return await read(this.client);
      } catch (error) {
        // Cut short by a replacement, which says nothing of the server the new client reaches: not
        // counted as a try (replacements are rate-limited, and bounded here too).
        if (error instanceof CutShort && ++cutShort <= ATTEMPTS) attempt -= 1;
        // A read that used up its deadline failed as StoreUnavailableError: not transient, not tried again.
        else if (!isTransientEsdbError(error) || attempt === ATTEMPTS) throw error;
        await sleep(retryDelayMs(attempt));
      }
    }
  }

  /**
   * Moves on from a client stuck on one node: one whose call got no answer within the deadline
   * (a node that lost its cluster may keep the connection and never answer), or that a node with
   * no leader answered "not ready" to. The client reconnects by itself only on UNAVAILABLE,
   * NotLeader and the server's cancellations, never on its own cancellations (client 6.2.1
   * Client/index.ts lines 516-531, utils/CommandError.ts lines 489-491), and keeps the streams it
   * has open. A new client looks for the leader afresh, through discovery (gossip) for a cluster's
   * connection string (reaching the same node, grpc-js may carry it over the same connection). The
   * old one is disposed: that cancels the streams it has open (reads and subscriptions end as if
   * complete, which eachEvent and subscribeToAll check; an append ends by its own deadline), and
   * again as its other calls settle (EsdbClients). Once per client, at most once per deadline, and
   * never with one host and no discovery, where it would reach the same node.
   */
  private replaceClient(stale: EventStoreDBClient, why: string): void {
    this.clients.replace(stale, why);
  }

  /**
   * The global position of a stream's event at `revision`. Not there (a node behind the one that
   * took the append): unavailable for now, a 503, not a bug.
   */
  private async positionOf(streamId: string, revision: bigint): Promise<Position> {
    let position: Position | undefined;
    try {
      await this.retried((client) =>
        this.eachEvent(client, client.readStream(streamId, { fromRevision: revision, maxCount: 1, ...ON_LEADER }), (resolved) => {
          if (resolved.event) position = toStoredEvent(resolved.event).position;
        }),
      );
    } catch (error) {
      if (!(error instanceof StreamNotFoundError)) throw translateEsdbError(error);
    }
    if (!position) throw new StoreUnavailableError('EventStoreDB', `no event ${streamId}@${revision} on the leader right after appending it`);
    return position;
  }

  /**
   * Hands each event of a read to `visit`, to the end of the read: a read left early stays open in
   * the client (its call paused, never finished), so reads are bounded by maxCount instead. A read
   * that stays silent for the deadline is cancelled and fails as unavailable, and `client` is
   * replaced. A read whose client was replaced meanwhile fails as CutShort, to be read again.
   */
  private async eachEvent(client: EventStoreDBClient, read: StreamingRead<ResolvedEvent>, visit: (resolved: ResolvedEvent) => void): Promise<void> {
    let silent = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        silent = true;
        this.replaceClient(client, `a read left unanswered for ${this.deadlineMs} ms`);
        // Not awaited: the call may still wait on a connection that never comes.
        void read.cancel().catch(() => undefined);
        read.destroy();
      }, this.deadlineMs);
    };
    arm();
    const leave = this.clients.enter(client);
    try {
      for await (const resolved of read) {
        visit(resolved);
        arm();
      }
    } catch (error) {
      if (!silent) throw error;
    } finally {
      clearTimeout(timer);
      leave();
    }
    if (silent) throw new StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`);
    // The client's own cancellation ends a read as if it were complete: it may lack events.
    if (client !== this.client) throw new CutShort();
  }

  /**
   * The call's result, or StoreUnavailableError once the deadline passes (the call is abandoned,
   * not undone, and `onTimeout` runs).
   */
  private withinDeadline<T>(call: Promise<T>, onTimeout?: () => void): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        onTimeout?.();
        reject(new StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`));
      }, this.deadlineMs);
    });
    call.catch(() => undefined); // an abandoned call's late failure is nobody's business
    return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
  }
}

/** An append's failure as the port names it: a store unavailable is of unknown outcome once an attempt may have been stored. */
function appendFailure(error: unknown, streamId: string, expected: ExpectedRevision, maybeStored: boolean): unknown {
  const failure = translateEsdbError(error, streamId, expected);
  return maybeStored && failure instanceof StoreUnavailableError ? new WriteOutcomeUnknownError(failure) : failure;
}

/** A read on a client replaced (and disposed) while it ran: unavailable if it stays so, else read again. */
class CutShort extends StoreUnavailableError {
  constructor() {
    super('EventStoreDB', 'the connection was replaced during a read');
  }
}

function isDrained(subscription: AllStreamSubscription): boolean {
  return subscription.readableLength === 0;
}
