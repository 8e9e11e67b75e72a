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
 * streams it has open at that moment (client 6.2.1 Client/index.ts lines 440-467), not its channel:
 * a call still in discovery opens its stream afterwards (lines 418-429). So a replaced client is
 * kept and disposed again whenever a call on it settles, and at close.
 */
export class EsdbClients {
  private readonly retired = new Set<EventStoreDBClient>();
  /** Calls we made on each client that have not settled. */
  private readonly calls = new Map<EventStoreDBClient, number>();
  private replacedAt = -Infinity;
  private closed = false;
  public current: EventStoreDBClient;

  /**
   * @param everyMs the least time between two replacements: a call's deadline, or the new client's
   *   first discovery if longer, so that a client is not replaced while it still looks for the leader
   */
  constructor(
    current: EventStoreDBClient,
    private readonly newClient: (() => EventStoreDBClient) | undefined,
    private readonly everyMs: number,
    private readonly logger: Logger,
  ) {
    this.current = guarded(current, logger);
  }

  /** Counts a call on `client` until the returned function is called. */
  enter(client: EventStoreDBClient): () => void {
    this.calls.set(client, (this.calls.get(client) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.calls.set(client, this.calls.get(client)! - 1);
      if (this.retired.size > 0) this.sweep();
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
    this.current = guarded(this.newClient(), this.logger);
    this.retired.add(stale);
    this.sweep();
  }

  /** Disposes every client, replaced ones included; none is made afterwards. */
  async close(bounded: (call: Promise<void>) => Promise<void>): Promise<void> {
    this.closed = true;
    const all = [this.current, ...this.retired];
    this.retired.clear();
    await Promise.all(all.map((client) => bounded(client.dispose())));
  }

  private sweep(): void {
    for (const client of this.retired) {
      // Not awaited: with its server gone, cancelling could wait on a reconnection.
      void client.dispose().catch(() => undefined);
      // Nothing new is started on a replaced client: with no call left, nothing can open again.
      if ((this.calls.get(client) ?? 0) === 0) {
        this.retired.delete(client);
        this.calls.delete(client);
      }
    }
  }
}

/**
 * The client after a call or a stream failed UNAVAILABLE (or named another leader) reconnects
 * without awaiting it, and that reconnection first waits on a discovery under way (client 6.2.1
 * Client/index.ts lines 434, 479 and 544): one that finds no leader (an election) rejected it with
 * nobody to catch it (discovery.ts line 78), ending the process. Its failure is the next call's.
 */
function guarded(client: EventStoreDBClient, logger: Logger): EventStoreDBClient {
  const reconnecting = client as unknown as { handleError: (...args: unknown[]) => Promise<void> };
  const handleError = reconnecting.handleError;
  reconnecting.handleError = (...args) =>
    handleError(...args).catch((error: Error) => logger.debug(`Reconnecting after a failed call: ${error.message}; the next call looks again`));
  return client;
}
