"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Metrics = void 0;
const prom_client_1 = require("prom-client");
const keyed_histogram_1 = require("./keyed-histogram");
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
class Metrics {
    constructor(instanceId) {
        this.registry = new prom_client_1.Registry();
        this.httpDuration = new keyed_histogram_1.KeyedHistogram('http_request_duration_seconds', 'Time from receiving an HTTP request to the end of its answer, by method, route template and status', HTTP_BUCKETS, this.registry);
        this.httpRequests = new keyed_histogram_1.CountsOf('http_requests_total', 'HTTP requests answered, by method, route template and status', this.httpDuration, this.registry);
        this.eventsAppended = new prom_client_1.Counter({
            name: 'events_appended_total',
            help: 'Events appended to the event store, by event type',
            labelNames: ['type'],
            registers: [this.registry],
        });
        this.eventStoreDuration = new keyed_histogram_1.KeyedHistogram('event_store_call_duration_seconds', 'Event store calls, by operation and outcome (ok or error)', STORE_BUCKETS, this.registry);
        this.readStoreDuration = new keyed_histogram_1.KeyedHistogram('read_store_call_duration_seconds', 'Read store calls, by operation and outcome (ok or error)', STORE_BUCKETS, this.registry);
        this.projectionCheckpoint = new prom_client_1.Gauge({
            name: 'projection_checkpoint',
            help: "The projection's checkpoint: the commit position of the last event it has folded (-1 before the first)",
            labelNames: ['projection'],
            registers: [this.registry],
        });
        this.projectionFolding = new prom_client_1.Gauge({
            name: 'projection_folding',
            help: 'Whether this instance holds the projection lease and folds (1) or follows the instance that does (0)',
            labelNames: ['projection'],
            registers: [this.registry],
        });
        this.projectionLag = new prom_client_1.Gauge({
            name: 'projection_lag',
            help: "How many events the projection's checkpoint is behind the event store's newest event; absent where the store cannot count them (EventStoreDB)",
            labelNames: ['projection'],
            registers: [this.registry],
        });
        this.registry.setDefaultLabels({ service_instance: instanceId });
        (0, prom_client_1.collectDefaultMetrics)({ register: this.registry });
    }
    async time(histogram, operation, call) {
        const started = performance.now();
        let outcome = 'error';
        try {
            const result = await call();
            outcome = 'ok';
            return result;
        }
        finally {
            histogram.of(`${operation} ${outcome}`, () => ({ operation, outcome })).observe((performance.now() - started) / 1000);
        }
    }
    observeRequest(req, res, seconds) {
        const route = req.route?.path ?? 'none';
        const { method } = req;
        const { statusCode } = res;
        this.httpDuration.of(`${method} ${route} ${statusCode}`, () => ({ method, route, status: String(statusCode) })).observe(seconds);
    }
}
exports.Metrics = Metrics;
//# sourceMappingURL=metrics.js.map