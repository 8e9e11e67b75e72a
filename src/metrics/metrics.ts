import type { Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { eventLoopDelay } from './event-loop-delay';
import { CountsOf, KeyedHistogram } from './keyed-histogram';
import { memorySplit } from './memory-split';

/** Seconds: from a fast SQLite read to a slow remote store. */
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The service's Prometheus metrics, in a registry of their own (one per app, so several apps in one
 * process, as in the tests, do not mix their figures). Labels never hold a raw URL or a token.
 * Every series carries `service_instance`, the instance that counted it: the figures are one
 * process's, and several instances (or WORKERS behind one port) must not look like one series.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new KeyedHistogram<'method' | 'route' | 'status'>(
    'http_request_duration_seconds',
    'Time from receiving an HTTP request to the end of its answer, by method, route template and status',
    HTTP_BUCKETS,
    this.registry,
  );

  /** The duration histogram's counts: counting each request once more would cost as much again. */
  readonly httpRequests = new CountsOf('http_requests_total', 'HTTP requests answered, by method, route template and status', this.httpDuration, this.registry);

  readonly eventsAppended = new Counter({
    name: 'events_appended_total',
    help: 'Events appended to the event store, by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly eventStoreDuration = new KeyedHistogram<'operation' | 'outcome'>(
    'event_store_call_duration_seconds',
    'Event store calls, by operation and outcome (ok or error)',
    STORE_BUCKETS,
    this.registry,
  );

  readonly readStoreDuration = new KeyedHistogram<'operation' | 'outcome'>(
    'read_store_call_duration_seconds',
    'Read store calls, by operation and outcome (ok or error)',
    STORE_BUCKETS,
    this.registry,
  );

  readonly projectionCheckpoint = new Gauge({
    name: 'projection_checkpoint',
    help: "The projection's checkpoint: the commit position of the last event it has folded (-1 before the first)",
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly projectionFolding = new Gauge({
    name: 'projection_folding',
    help: 'Whether this instance holds the projection lease and folds (1) or follows the instance that does (0)',
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly projectionLag = new Gauge({
    name: 'projection_lag',
    help: "How many events the projection's checkpoint is behind the event store's newest event; absent where the store cannot count them (EventStoreDB)",
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly projectionParked = new Gauge({
    name: 'projection_parked_events',
    help: 'Events the read model holds parked (with POISON_EVENTS=park): the first event of each parked stream it cannot fold, and the events of that stream waiting behind it',
    labelNames: ['read_model'] as const,
    registers: [this.registry],
  });

  readonly feedOpen = new Gauge({
    name: 'feed_open_requests',
    help: "The change feed's event streams and long-polls open now, each holding a connection",
    registers: [this.registry],
  });

  /**
   * The resident size split by what holds it, read on each scrape (see memorySplit): `resident` is
   * `anonymous` plus `file`; `anonymous` is `js_heap` plus `native`. Linux only: absent elsewhere.
   */
  readonly memory = new Gauge({
    name: 'process_memory_bytes',
    help: 'Resident memory by kind: resident = anonymous + file (mapped files); anonymous = js_heap (V8 heap of the main thread) + native (SQLite caches, buffers, keys, worker threads, malloc)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
    collect() {
      const split = memorySplit();
      if (split) for (const [kind, bytes] of Object.entries(split)) this.set({ kind }, bytes);
    },
  });

  private readonly loopDelay: { stop(): void };

  constructor(instanceId: string) {
    this.registry.setDefaultLabels({ service_instance: instanceId });
    collectDefaultMetrics({ register: this.registry });
    this.loopDelay = eventLoopDelay(this.registry);
  }

  /** Times a store call into `histogram`, labelled with its outcome. */
  async time<T>(histogram: KeyedHistogram<'operation' | 'outcome'>, operation: string, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'error';
    try {
      const result = await call();
      outcome = 'ok';
      return result;
    } finally {
      histogram.of(`${operation} ${outcome}`, () => ({ operation, outcome })).observe((performance.now() - started) / 1000);
    }
  }

  /**
   * Counts and times a request once its answer is done. The route is the template Express matched
   * (`/v1/customers/:id`); requests answered before routing (a missing token, an unknown path, a
   * body refused) are labelled `none`.
   */
  observeRequest(req: Request, res: Response, seconds: number): void {
    const route = (req.route as { path?: string } | undefined)?.path ?? 'none';
    const { method } = req;
    const { statusCode } = res;
    this.httpDuration.of(`${method} ${route} ${statusCode}`, () => ({ method, route, status: String(statusCode) })).observe(seconds);
  }

  /** Called by Nest as the app closes: the event loop's sampling timer stops with it. */
  onModuleDestroy(): void {
    this.loopDelay.stop();
  }
}
