import { Logger } from '@nestjs/common';
import {
  AllStreamResolvedEvent,
  AllStreamSubscription,
  BACKWARDS,
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
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import {
  AppendResult,
  comparePositions,
  EventBatch,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  START,
  StoredEvent,
  SubscribeOptions,
} from './event-store.port';
import {
  fromEsdbRevision,
  isEndOfLog,
  isServerRecord,
  isTransientEsdbError,
  logPosition,
  retryDelayMs,
  subscriptionFilter,
  toEsdbExpectedRevision,
  toStoredEvent,
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
/** Events read at once when looking for the head past the server's own events at the end of the log. */
const HEAD_PAGE = 32;

/** Put in the subscription's own output by its checkpointReached callback, so it stays in order with the events. */
interface CheckpointMarker {
  checkpoint: Position;
}

/**
 * Event store on EventStoreDB (client 6.x). Appends carry the port's event ids as EventStoreDB event
 * ids, so the server recognises a re-sent append as the same one. Subscriptions are catch-up
 * subscriptions to $all, filtered on the server by stream prefix and read with `for await`, one
 * message at a time; they resubscribe with backoff from the last position delivered when the server
 * goes away.
 *
 * Every call is bounded by `deadlineMs` here, not by the client: its reads and subscriptions run
 * with no deadline whatever is passed, and the first append on a channel first asks the server for
 * its features with none either.
 *
 * A subscription can also fall silent for good without failing: a node that lost its cluster
 * keeps the call open, and the client keeps a started call when it reconnects elsewhere. So one
 * silent for `silenceMs` while the head (read from the leader) is past it is dropped and renewed.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly logger = new Logger('EventStoreDB');

  /**
   * @param deadlineMs how long one call may wait for the server before it fails as unavailable
   * @param silenceMs how long a subscription may hear nothing before the head is checked
   */
  constructor(
    private readonly client: EventStoreDBClient,
    private readonly deadlineMs: number,
    private readonly silenceMs = DEFAULT_SILENCE_MS,
  ) {}

  /**
   * A client for the connection string, once the server has answered a read within `timeoutMs`:
   * a wrong or unreachable server stops the start with a clear error rather than a hang.
   */
  static async connect(connectionString: string, timeoutMs: number, silenceMs = DEFAULT_SILENCE_MS): Promise<EventStoreDbEventStore> {
    let client: EventStoreDBClient;
    try {
      client = EventStoreDBClient.connectionString(connectionString);
    } catch (error) {
      throw new ConfigError(`EVENTSTORE_CONNECTION_STRING cannot be parsed: ${(error as Error).message}`);
    }
    const store = new EventStoreDbEventStore(client, timeoutMs, silenceMs);
    try {
      // Bounded like every call, cluster discovery (esdb+discover://) included.
      await store.headPosition();
    } catch (error) {
      await store.close();
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError('EventStoreDB', (error as Error).message);
    }
    return store;
  }

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('appendToStream needs at least one event');
    const data = events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: { ...e.metadata } }));
    const expectedRevision = toEsdbExpectedRevision(expected);
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.withinDeadline(this.client.appendToStream(streamId, data, { expectedRevision, deadline: this.deadlineMs, ...ON_LEADER }));
        // The server leaves the position out when it recognised the append as one it already stored.
        const position = result.position ?? (await this.positionOf(streamId, result.nextExpectedRevision));
        return { revision: fromEsdbRevision(result.nextExpectedRevision), position };
      } catch (error) {
        // A lost answer may hide a write that landed: sending the same event ids again at the same
        // expected revision is idempotent on the server, so a retry cannot store the events twice.
        // A call that used up its deadline is not retried: the caller has waited long enough.
        if (!isTransientEsdbError(error) || attempt === ATTEMPTS) throw translateEsdbError(error, streamId, expected);
        await sleep(retryDelayMs(attempt));
      }
    }
  }

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
      return await this.retried(async () => {
        const events: StoredEvent[] = [];
        await this.eachEvent(this.client.readStream(streamId, { ...options, ...ON_LEADER }), (resolved) => {
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
      return await this.retried(() => this.readHead());
    } catch (error) {
      throw translateEsdbError(error);
    }
  }

  private async readHead(): Promise<Position> {
    let from: Position | typeof END = END;
    for (;;) {
      const page: Position[] = [];
      let head: Position | undefined;
      await this.eachEvent(this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: HEAD_PAGE, ...ON_LEADER }), (resolved) => {
        const event = resolved.event;
        if (!event?.position) return;
        const position = { commit: event.position.commit, prepare: event.position.prepare };
        // A page read from a position may start with the event at that position: the last page's.
        if (from !== END && comparePositions(position, from) >= 0) return;
        page.push(position);
        if (!head && !isSystemStream(event.streamId)) head = position;
      });
      if (head) return head;
      if (page.length === 0) return START;
      from = page[page.length - 1];
    }
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
    // The head a silent subscription was last renewed for. Renewed on the leader, a subscription
    // has everything up to it: when the head is past its position still, what lies between is
    // filtered out (the server need not send a checkpoint for it), so it is not renewed again.
    let renewedFor: Position | undefined;
    while (!signal.aborted) {
      const subscription = this.client.subscribeToAll(
        {
          fromPosition: comparePositions(position, START) === 0 ? ESDB_START : position,
          filter: subscriptionFilter(options.streamPrefix, (sub, checkpoint) => {
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
      const unconfirmed = setTimeout(
        () => subscription.destroy(new StoreUnavailableError('EventStoreDB', `no subscription confirmation within ${this.deadlineMs} ms`)),
        this.deadlineMs,
      );
      let batchPosition = position;
      const watchdog = this.watch(subscription, (head) => {
        if (comparePositions(head, batchPosition) <= 0 || (renewedFor && comparePositions(head, renewedFor) === 0)) return false;
        renewedFor = head;
        return true;
      });
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
            const event = toStoredEvent(message.event);
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
        this.logger.warn(`Subscription ended by the server; resubscribing in ${retryDelayMs(failures)} ms`);
      } catch (error) {
        if (signal.aborted) return;
        if (!(error instanceof StoreUnavailableError) && !isTransientEsdbError(error)) throw translateEsdbError(error);
        failures += 1;
        this.logger.warn(`Subscription lost (${(error as Error).message}); resubscribing in ${retryDelayMs(failures)} ms`);
      } finally {
        clearTimeout(unconfirmed);
        watchdog.pause();
        signal.removeEventListener('abort', stop);
        // Not awaited: with the server gone, cancelling could wait on a reconnection.
        void subscription.unsubscribe().catch(() => undefined);
      }
      await sleep(retryDelayMs(failures), signal);
    }
  }

  /** Bounded too: the client waits for every call it has open to finish, and one may never. */
  async close(): Promise<void> {
    await this.withinDeadline(this.client.dispose()).catch((error: Error) => this.logger.warn(`Closing: ${error.message}`));
  }

  /**
   * Fails `subscription` as unavailable once it has heard nothing for silenceMs and the head is one
   * it is `behind`, or cannot be read. Armed while the subscription is waited on; paused while a
   * message is handled, so a batch being folded is not taken for silence.
   */
  private watch(subscription: AllStreamSubscription, behind: (head: Position) => boolean): { arm(): void; pause(): void } {
    let timer: NodeJS.Timeout | undefined;
    // Moved on by every arm and pause: a head read that ends after one decides nothing.
    let turn = 0;
    const check = async (mine: number) => {
      const head = await this.headPosition().catch((error: Error) => error);
      if (mine !== turn) return;
      if (!(head instanceof Error) && !behind(head)) return arm();
      const why = head instanceof Error ? `the head cannot be read (${head.message})` : `the head is at ${head.commit}/${head.prepare}`;
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

  /** A read, tried again when the server failed it for now or named another leader (the client reconnects to it meanwhile). */
  private async retried<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        // A read that used up its deadline failed as StoreUnavailableError: not transient, not tried again.
        if (!isTransientEsdbError(error) || attempt === ATTEMPTS) throw error;
        await sleep(retryDelayMs(attempt));
      }
    }
  }

  /**
   * The global position of a stream's event at `revision`. Not there (a node behind the one that
   * took the append): unavailable for now, a 503, not a bug.
   */
  private async positionOf(streamId: string, revision: bigint): Promise<Position> {
    let position: Position | undefined;
    try {
      await this.retried(() =>
        this.eachEvent(this.client.readStream(streamId, { fromRevision: revision, maxCount: 1, ...ON_LEADER }), (resolved) => {
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
   * that stays silent for the deadline is cancelled and fails as unavailable.
   */
  private async eachEvent(read: StreamingRead<ResolvedEvent>, visit: (resolved: ResolvedEvent) => void): Promise<void> {
    let silent = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        silent = true;
        // Not awaited: the call may still wait on a connection that never comes.
        void read.cancel().catch(() => undefined);
        read.destroy();
      }, this.deadlineMs);
    };
    arm();
    try {
      for await (const resolved of read) {
        visit(resolved);
        arm();
      }
    } catch (error) {
      if (!silent) throw error;
    } finally {
      clearTimeout(timer);
    }
    if (silent) throw new StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`);
  }

  /** The call's result, or StoreUnavailableError once the deadline passes (the call is abandoned, not undone). */
  private withinDeadline<T>(call: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError('EventStoreDB', `no answer within ${this.deadlineMs} ms`)), this.deadlineMs);
    });
    call.catch(() => undefined); // an abandoned call's late failure is nobody's business
    return Promise.race([call, deadline]).finally(() => clearTimeout(timer));
  }
}

const isSystemStream = (streamId: string) => streamId.startsWith('$');

function isDrained(subscription: AllStreamSubscription): boolean {
  return subscription.readableLength === 0;
}

/** Resolves after `ms`, or at once when the signal aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
