import { Logger } from '@nestjs/common';
import {
  AllStreamResolvedEvent,
  AllStreamSubscription,
  BACKWARDS,
  END,
  EventStoreDBClient,
  jsonEvent,
  START as ESDB_START,
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
  isTransientEsdbError,
  retryDelayMs,
  subscriptionFilter,
  toEsdbExpectedRevision,
  toStoredEvent,
  translateEsdbError,
} from './eventstoredb-mapping';

const DEFAULT_BATCH = 1000;
const APPEND_ATTEMPTS = 3;

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
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly logger = new Logger('EventStoreDB');

  /** @param deadlineMs how long one call may take before it fails as unavailable */
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
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError('EventStoreDB', `no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      // The race also bounds cluster discovery (esdb+discover://), which the call's deadline does not cover.
      await Promise.race([store.readHead(), timeout]);
    } catch (error) {
      await store.close();
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError('EventStoreDB', (error as Error).message);
    } finally {
      clearTimeout(timer);
    }
    return store;
  }

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('appendToStream needs at least one event');
    const data = events.map((e) => jsonEvent({ id: e.id, type: e.type, data: e.data, metadata: { ...e.metadata } }));
    const expectedRevision = toEsdbExpectedRevision(expected);
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.client.appendToStream(streamId, data, { expectedRevision, deadline: this.deadlineMs });
        // The server leaves the position out when it recognised the append as one it already stored.
        const position = result.position ?? (await this.positionOf(streamId, result.nextExpectedRevision));
        return { revision: fromEsdbRevision(result.nextExpectedRevision), position };
      } catch (error) {
        // A lost answer may hide a write that landed: sending the same event ids again at the same
        // expected revision is idempotent on the server, so a retry cannot store the events twice.
        if (!isTransientEsdbError(error) || attempt === APPEND_ATTEMPTS) throw translateEsdbError(error, streamId, expected);
        await sleep(retryDelayMs(attempt));
      }
    }
  }

  async readStream(streamId: string, fromRevision = 0): Promise<StoredEvent[]> {
    const events: StoredEvent[] = [];
    try {
      const read = this.client.readStream(streamId, { fromRevision: BigInt(fromRevision), deadline: this.deadlineMs });
      for await (const resolved of read) {
        if (resolved.event) events.push(toStoredEvent(resolved.event));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw translateEsdbError(error);
    }
    return events;
  }

  async headPosition(): Promise<Position> {
    try {
      return await this.readHead();
    } catch (error) {
      throw translateEsdbError(error);
    }
  }

  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    const { signal } = options;
    const maxBatchSize = options.maxBatchSize ?? DEFAULT_BATCH;
    let position = from;
    let failures = 0;
    while (!signal.aborted) {
      const subscription = this.client.subscribeToAll({
        fromPosition: comparePositions(position, START) === 0 ? ESDB_START : position,
        filter: subscriptionFilter(options.streamPrefix, (sub, checkpoint) => {
          sub.push({ checkpoint } satisfies CheckpointMarker);
        }),
      });
      // Destroying the stream ends the `for await` below at once, wherever it is waiting.
      const stop = () => subscription.destroy();
      signal.addEventListener('abort', stop, { once: true });
      try {
        let events: StoredEvent[] = [];
        let batchPosition = position;
        for await (const message of subscription as AsyncIterable<AllStreamResolvedEvent | CheckpointMarker>) {
          failures = 0;
          if ('checkpoint' in message) {
            if (comparePositions(message.checkpoint, batchPosition) > 0) batchPosition = message.checkpoint;
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
        if (!isTransientEsdbError(error)) throw translateEsdbError(error);
        failures += 1;
        this.logger.warn(`Subscription lost (${(error as Error).message}); resubscribing in ${retryDelayMs(failures)} ms`);
      } finally {
        signal.removeEventListener('abort', stop);
        // Not awaited: with the server gone, cancelling could wait on a reconnection.
        void subscription.unsubscribe().catch(() => undefined);
      }
      await sleep(retryDelayMs(failures), signal);
    }
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }

  /** The global position of a stream's event at `revision`. */
  private async positionOf(streamId: string, revision: bigint): Promise<Position> {
    const read = this.client.readStream(streamId, { fromRevision: revision, maxCount: 1, deadline: this.deadlineMs });
    for await (const resolved of read) {
      if (resolved.event) return toStoredEvent(resolved.event).position;
    }
    throw new Error(`EventStoreDB has no event ${streamId}@${revision} right after appending it`);
  }

  /** The position of the last event in $all (the server's own events included), or START. */
  private async readHead(): Promise<Position> {
    const last = this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, deadline: this.deadlineMs });
    for await (const resolved of last) {
      const position = resolved.event?.position;
      if (position) return { commit: position.commit, prepare: position.prepare };
    }
    return START;
  }
}

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
