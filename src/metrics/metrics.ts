import type { Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

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

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from receiving an HTTP request to the end of its answer, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });

  readonly eventsAppended = new Counter({
    name: 'events_appended_total',
    help: 'Events appended to the event store, by event type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly eventStoreDuration = new Histogram({
    name: 'event_store_call_duration_seconds',
    help: 'Event store calls, by operation and outcome (ok or error)',
    labelNames: ['operation', 'outcome'] as const,
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });

  readonly readStoreDuration = new Histogram({
    name: 'read_store_call_duration_seconds',
    help: 'Read store calls, by operation and outcome (ok or error)',
    labelNames: ['operation', 'outcome'] as const,
    buckets: STORE_BUCKETS,
    registers: [this.registry],
  });

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

  constructor(instanceId: string) {
    this.registry.setDefaultLabels({ service_instance: instanceId });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Times a store call into `histogram`, labelled with its outcome. */
  async time<T>(histogram: Histogram<'operation' | 'outcome'>, operation: string, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'error';
    try {
      const result = await call();
      outcome = 'ok';
      return result;
    } finally {
      this.series(histogram, operation, outcome).observe((performance.now() - started) / 1000);
    }
  }

  /** A histogram's series for these labels, kept: prom-client would hash the labels on every call. */
  private series(histogram: Histogram<'operation' | 'outcome'>, operation: string, outcome: string): { observe(v: number): void } {
    let byLabels = this.storeSeries.get(histogram);
    if (!byLabels) this.storeSeries.set(histogram, (byLabels = new Map()));
    const key = `${operation} ${outcome}`;
    let series = byLabels.get(key);
    if (!series) byLabels.set(key, (series = histogram.labels({ operation, outcome })));
    return series;
  }

  private readonly storeSeries = new Map<Histogram<'operation' | 'outcome'>, Map<string, { observe(v: number): void }>>();

  /**
   * Counts and times a request once its answer is done. The route is the template Express matched
   * (`/v1/customers/:id`); requests answered before routing (a missing token, an unknown path, a
   * body refused) are labelled `none`.
   */
  observeRequest(req: Request, res: Response, seconds: number): void {
    const route: string = req.route?.path ?? 'none';
    const key = `${req.method} ${route} ${res.statusCode}`;
    let series = this.httpSeries.get(key);
    if (!series) {
      const labels = { method: req.method, route, status: String(res.statusCode) };
      series = { duration: this.httpDuration.labels(labels), requests: this.httpRequests.labels(labels) };
      this.httpSeries.set(key, series);
    }
    series.duration.observe(seconds);
    series.requests.inc();
  }

  /** Each label set's series, found by one string key rather than by prom-client hashing the labels on every request. */
  private readonly httpSeries = new Map<string, { duration: { observe(v: number): void }; requests: { inc(): void } }>();
}
