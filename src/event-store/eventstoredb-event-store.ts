import { Logger } from '@nestjs/common';
import {
  AllStreamResolvedEvent,
  AllStreamSubscription,
  BACKWARDS,
  END,
  EventStoreDBClient,
  jsonEvent,
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
const APPEND_ATTEMPTS = 3;
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
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly logger = new Logger('EventStoreDB');
  /** The end of the log as last read: checkpoints beyond it are refused. */
  private logEnd: Position = START;

  /** @param deadlineMs how long one call may wait for the server before it fails as unavailable */
  constructor(
    private readonly client: EventStoreDBClient,
    private readonly deadlineMs: number,
  ) {}

  /**
   * A client for the connection string, once the server has answered a read within `timeoutMs`:
   * a wrong or unreachable server stops the start with a clear error rather than a hang.
   */
  static async connect(connectionString: string, timeoutMs: number): Promise<EventStoreDbEventStore> {
    let client: EventStoreDBClient;
    try {
      client = EventStoreDBClient.connectionString(connectionString);
    } catch (error) {
      throw new ConfigError(`EVENTSTORE_CONNECTION_STRING cannot be parsed: ${(error as Error).message}`);
    }
    const store = new EventStoreDbEventStore(client, timeoutMs);
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
        const result = await this.withinDeadline(this.client.appendToStream(streamId, data, { expectedRevision, deadline: this.deadlineMs }));
        // The server leaves the position out when it recognised the append as one it already stored.
        const position = result.position ?? (await this.positionOf(streamId, result.nextExpectedRevision));
        return { revision: fromEsdbRevision(result.nextExpectedRevision), position };
      } catch (error) {
        // A lost answer may hide a write that landed: sending the same event ids again at the same
        // expected revision is idempotent on the server, so a retry cannot store the events twice.
        // A call that used up its deadline is not retried: the caller has waited long enough.
        if (!isTransientEsdbError(error) || attempt === APPEND_ATTEMPTS) throw translateEsdbError(error, streamId, expected);
        await sleep(retryDelayMs(attempt));
      }
    }
  }

  async readStream(streamId: string, fromRevision = 0): Promise<StoredEvent[]> {
    const events: StoredEvent[] = [];
    try {
      await this.eachEvent(this.client.readStream(streamId, { fromRevision: BigInt(fromRevision) }), (resolved) => {
        if (resolved.event) events.push(toStoredEvent(resolved.event));
      });
    } catch (error) {
      // A stream deleted on the server (by hand: the service never deletes one) holds no record, as one never written.
      if (error instanceof StreamNotFoundError || error instanceof StreamDeletedError) return [];
      throw translateEsdbError(error);
    }
    return events;
  }

  /**
   * The last event of a stream not the server's own (`$…`): where a subscription without prefix
   * ends. The log is read backwards a page at a time, past the server's own events at its end.
   */
  async headPosition(): Promise<Position> {
    try {
      let from: Position | typeof END = END;
      for (;;) {
        const page: Position[] = [];
        let head: Position | undefined;
        await this.eachEvent(this.client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: HEAD_PAGE }), (resolved) => {
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
    } catch (error) {
      throw translateEsdbError(error);
    }
  }

  /** Unknown: positions are byte offsets in the server's log, not event counts. */
  eventsBetween(): null {
    return null;
  }

  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    const { signal } = options;
    const maxBatchSize = options.maxBatchSize ?? DEFAULT_BATCH;
    let position = await this.withinLog(from);
    let failures = 0;
    while (!signal.aborted) {
      const subscription = this.client.subscribeToAll(
        {
          fromPosition: comparePositions(position, START) === 0 ? ESDB_START : position,
          filter: subscriptionFilter(options.streamPrefix, (sub, checkpoint) => {
            sub.push({ checkpoint } satisfies CheckpointMarker);
          }),
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
      subscription.once('confirmation', () => clearTimeout(unconfirmed));
      try {
        let events: StoredEvent[] = [];
        let batchPosition = position;
        for await (const message of subscription as AsyncIterable<AllStreamResolvedEvent | CheckpointMarker>) {
          clearTimeout(unconfirmed);
          failures = 0;
          if ('checkpoint' in message) {
            if (comparePositions(message.checkpoint, batchPosition) > 0 && (await this.isInLog(message.checkpoint))) {
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
   * Whether a checkpoint lies within the log. Servers 24.10.0 to 24.10.4 send 2^64-1 (their "end"
   * sentinel) as a filtered subscription's checkpoint when nothing matched before it went live;
   * stored, it would make the next subscription start at the live end and skip what it missed.
   */
  private async isInLog(checkpoint: Position): Promise<boolean> {
    if (comparePositions(checkpoint, this.logEnd) <= 0) return true;
    this.logEnd = await this.readLogEnd();
    if (comparePositions(checkpoint, this.logEnd) <= 0) return true;
    this.logger.warn(`Ignored a checkpoint beyond the end of the log (${checkpoint.commit}/${checkpoint.prepare})`);
    return false;
  }

  /** A subscription's start, or START when it lies beyond the log (a checkpoint stored before isInLog existed). */
  private async withinLog(from: Position): Promise<Position> {
    if (comparePositions(from, START) === 0 || (await this.isInLog(from))) return from;
    this.logger.error(`Position ${from.commit}/${from.prepare} is beyond the end of the log: folding again from the start`);
    return START;
  }

  /** The position of the last event in $all, the server's own included, or START. */
  private async readLogEnd(): Promise<Position> {
    let end = START;
    try {
      await this.eachEvent(this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 }), (resolved) => {
        if (resolved.event?.position) end = { commit: resolved.event.position.commit, prepare: resolved.event.position.prepare };
      });
    } catch (error) {
      throw translateEsdbError(error);
    }
    return end;
  }

  /** The global position of a stream's event at `revision`. */
  private async positionOf(streamId: string, revision: bigint): Promise<Position> {
    let position: Position | undefined;
    await this.eachEvent(this.client.readStream(streamId, { fromRevision: revision, maxCount: 1 }), (resolved) => {
      if (resolved.event) position = toStoredEvent(resolved.event).position;
    });
    if (!position) throw new Error(`EventStoreDB has no event ${streamId}@${revision} right after appending it`);
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
