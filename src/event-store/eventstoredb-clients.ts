import { Logger } from '@nestjs/common';
import { EventStoreDBClient } from '@eventstore/db-client';
import { ConfigError } from '../config/config';

/**
 * How the adapter makes new clients for a connection string. A new client only helps when it may
 * reach another node: with one host and no discovery it connects to the same endpoint again
 * (client 6.2.1 Client/index.ts lines 286-297 and 600-604), so none is made (`newClient` unset).
 * For seeds or discovery the gossip timeout is bounded so that asking every seed once fits in the
 * call's deadline, and `discoveryMs` is how long that takes at most.
 */
export interface Reconnection {
  connectionString: string;
  newClient?: () => EventStoreDBClient;
  discoveryMs: number;
}

/** A gossipTimeout given in the connection string, in seconds (the client's default: 6.2.1 Client/discovery.ts line 23, used as seconds at lines 151-155). */
const GOSSIP_TIMEOUT_PARAM = /[?&]gossipTimeout=([^&]*)/i;

export function reconnection(connectionString: string, timeoutMs: number): Reconnection {
  const [scheme, rest = ''] = connectionString.trim().split('://');
  const hosts = rest
    .split(/[/?]/)[0]
    .split(',')
    .filter((h) => h.length > 0).length;
  const discover = scheme.toLowerCase() === 'esdb+discover';
  if (!discover && hosts <= 1) return { connectionString, discoveryMs: 0 };
  // Discovery asks each seed in turn (one DNS name for esdb+discover), each for up to gossipTimeout
  // seconds (discovery.ts lines 41-58). At the default 5 s, one unresponsive seed would use up the
  // whole default STORE_TIMEOUT_MS, and the call's timer would replace the new client before it finds the leader.
  const seeds = discover ? 1 : hosts;
  const given = GOSSIP_TIMEOUT_PARAM.exec(connectionString)?.[1];
  let seconds: number;
  if (given !== undefined) {
    seconds = Number.parseInt(given, 10);
    if (Number.isNaN(seconds) || seconds < 1 || seconds * 1000 * seeds >= timeoutMs) {
      throw new ConfigError(
        `EVENTSTORE_CONNECTION_STRING: gossipTimeout=${given} (seconds) × ${seeds} seed(s) must stay under STORE_TIMEOUT_MS (${timeoutMs} ms), or leave it out`,
      );
    }
  } else {
    seconds = Math.ceil(timeoutMs / (1000 * seeds)) - 1;
    if (seconds < 1) {
      throw new ConfigError(`STORE_TIMEOUT_MS (${timeoutMs} ms) must be over 1000 ms per gossip seed (${seeds}) of EVENTSTORE_CONNECTION_STRING`);
    }
    connectionString = `${connectionString}${connectionString.includes('?') ? '&' : '?'}gossipTimeout=${seconds}`;
  }
  return { connectionString, newClient: () => EventStoreDBClient.connectionString(connectionString), discoveryMs: seconds * 1000 * seeds };
}

/**
 * The adapter's current client, and the clients it replaced. Disposing a client cancels only the
 * streams it has open at that moment (client 6.2.1 Client/index.ts lines 440-467): a call still in
 * discovery or waiting for the server's features opens its stream afterwards (lines 418-429;
 * appendToStream/index.ts lines 59-61), and the channel stays open while a call is left on it.
 * So a replaced client is kept and disposed again whenever a call on it settles, and at close.
 *
 * Appends go over one batch-append stream per client, whose pending answers are kept in a map
 * shared by all clients (streams/appendToStream/batchAppend.ts lines 32-35): when a stream fails,
 * by its disposal or by itself (its node gone), every pending append is rejected, other clients'
 * too (lines 112-117), and the answer that another client's server then sends for one of them
 * throws in grpc-js (line 61): an uncaught exception that ends the process. So no two clients
 * may have appends under way at once: after a replacement, appends on the new client wait
 * (appendable) until no append is left on a replaced one, each replaced client disposed every
 * DRAIN_EVERY_MS meanwhile, so that a stream one opens late is cancelled as soon as it opens;
 * the replaced client's appends so cancelled are tried again on the new one.
 */
export class EsdbClients {
  private readonly retired = new Set<EventStoreDBClient>();
  /** Calls we made and that have not settled, per client: appends, and all calls. */
  private readonly appends = new Map<EventStoreDBClient, number>();
  private readonly calls = new Map<EventStoreDBClient, number>();
  private replacedAt = -Infinity;
  private closed = false;
  /** While replaced clients still have appends under way: settles once none has (see appendable). */
  private draining?: Promise<void>;

  /**
   * @param everyMs the least time between two replacements: a call's deadline, or the new client's
   *   first discovery if longer, so that a client is not replaced while it still looks for the leader
   */
  constructor(
    public current: EventStoreDBClient,
    private readonly newClient: (() => EventStoreDBClient) | undefined,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Resolves once an append may start on the current client: at once, unless a replaced client
   * still has appends under way (see the class). False if that lasts `withinMs`.
   */
  async appendable(withinMs: number): Promise<boolean> {
    if (!this.draining) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), withinMs)));
    try {
      return await Promise.race([this.draining.then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts a call on `client` until the returned function is called. */
  enter(client: EventStoreDBClient, append = false): () => void {
    const add = (map: Map<EventStoreDBClient, number>, n: number) => map.set(client, (map.get(client) ?? 0) + n);
    add(this.calls, 1);
    if (append) add(this.appends, 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      add(this.calls, -1);
      if (append) add(this.appends, -1);
      if (this.retired.has(client)) this.sweep();
    };
  }

  /** Moves on from `stale` to a new client, unless it was already, or one was made too recently. */
  replace(stale: EventStoreDBClient, why: string): void {
    if (!this.newClient || this.closed || stale !== this.current) return;
    if (Date.now() - this.replacedAt < this.everyMs) {
      this.logger.debug(`Not connecting again after ${why}: the last new connection is under ${this.everyMs} ms old`);
      return;
    }
    this.logger.warn(`Connecting to EventStoreDB again after ${why}`);
    this.replacedAt = Date.now();
    this.current = this.newClient();
    this.retired.add(stale);
    this.draining ??= this.drain();
    this.sweep();
  }

  /** Disposes every client, replaced ones included; none is made afterwards. */
  async close(bounded: (call: Promise<void>) => Promise<void>): Promise<void> {
    this.closed = true;
    const all = [this.current, ...this.retired];
    this.retired.clear();
    await Promise.all(all.map((client) => bounded(client.dispose())));
  }

  /**
   * Disposes the replaced clients every DRAIN_EVERY_MS until none has an append under way, then
   * once more, waiting (DRAIN_SETTLE_MS at most) until their streams have ended: a batch-append
   * stream's failure has then rejected what it had pending, before the current client's appends go.
   */
  private async drain(): Promise<void> {
    const appending = () => [...this.retired].some((client) => (this.appends.get(client) ?? 0) > 0);
    while (!this.closed) {
      const disposals = [...this.retired].map((client) => client.dispose().catch(() => undefined));
      if (!appending()) {
        await Promise.race([Promise.all(disposals), new Promise((resolve) => setTimeout(resolve, DRAIN_SETTLE_MS).unref())]);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, DRAIN_EVERY_MS));
    }
    this.draining = undefined;
    this.sweep();
  }

  /** Disposes the replaced clients again, and forgets those with no call left (not while draining, which disposes them last). */
  private sweep(): void {
    for (const client of this.retired) {
      // Not awaited: with its server gone, cancelling could wait on a reconnection.
      void client.dispose().catch(() => undefined);
      if (!this.draining && (this.calls.get(client) ?? 0) === 0) {
        this.retired.delete(client);
        this.calls.delete(client);
        this.appends.delete(client);
      }
    }
  }
}

/** How often replaced clients with appends under way are disposed again (see EsdbClients). */
const DRAIN_EVERY_MS = 50;
/** How long the last disposal of a drain may take to end the replaced clients' streams before appends go on regardless. */
const DRAIN_SETTLE_MS = 1000;
