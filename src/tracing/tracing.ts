import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Attributes, type Link, type Span } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { IncomingMessage } from 'node:http';
import { ConfigError } from '../config/config';
import { redactUrl } from '../logging/logging';

/** The service's name in traces, unless OTEL_SERVICE_NAME gives another. */
export const SERVICE_NAME = 'profiles-customers-service';

const tracer = trace.getTracer(SERVICE_NAME);
/** Whether the SDK runs in this process: off, the service's own spans cost one test of this. */
let on = false;

/**
 * Traces are exported when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** The OTLP exporter of each protocol OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL may name. */
const EXPORTERS: Record<string, string> = {
  'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
  'http/json': '@opentelemetry/exporter-trace-otlp-http',
  grpc: '@opentelemetry/exporter-trace-otlp-grpc',
};

export interface Tracing {
  /** Where spans go, for the start-up line. */
  endpoint: string;
  /** Exports what is left; the process may exit after. */
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry's SDK for Node when it is configured (see tracingConfigured), with the HTTP,
 * Express and NestJS instrumentations; the SDK reads the other standard OTEL_* variables itself
 * (service name, resource attributes, sampler, batch settings, headers). Must run before `http` and
 * `express` are first loaded, so main.ts and cli.ts import ./register first. Not configured, the
 * SDK is never loaded, and the service's spans (`inSpan`) are plain calls.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (!tracingConfigured(env)) return undefined;
  // The traces' own setting over the general one, as the exporters read them; the error names the one given.
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[variable]?.trim() || 'http/protobuf';
  const exporterModule = EXPORTERS[protocol];
  if (!exporterModule) throw new ConfigError(`${variable} must be one of ${Object.keys(EXPORTERS).join(', ')}; got "${protocol}"`);
  // Loaded only here: with tracing off, none of the SDK is in the process.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { ExpressInstrumentation, ExpressLayerType } =
    require('@opentelemetry/instrumentation-express') as typeof import('@opentelemetry/instrumentation-express');
  const { OTLPTraceExporter } = require(exporterModule) as { OTLPTraceExporter: new () => SpanExporter };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: SERVICE_NAME }),
    traceExporter: new RedactingSpanExporter(new OTLPTraceExporter()),
    // Metrics are Prometheus's (/metrics), logs are stdout's: the SDK sends traces only.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes, every few seconds, are not requests anyone traces.
        ignoreIncomingRequestHook: (req: IncomingMessage) => /^\/(health|metrics)(\/|\?|$)/.test(req.url ?? ''),
        // The service's only outgoing HTTP is the exporter's own.
        ignoreOutgoingRequestHook: () => true,
      }),
      // No NestJS instrumentation: @opentelemetry/instrumentation-nestjs-core patches @nestjs/core
      // below 12 only. The commands' and queries' spans (instrumentCqrs) name what a handler does.
      // For the route it gives the server span (`POST /v1/customers/:id`, http.route). Not a span per
      // layer: Nest's middleware are anonymous functions (`middleware - <anonymous>`, three a
      // request) and its request handler spans what the server span does; without them the command
      // or query is the server span's child, and a traced read costs less (docs/benchmarks.md).
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.REQUEST_HANDLER] }),
    ],
  });
  sdk.start();
  instrumentCqrs();
  on = true;
  return {
    endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT!.trim(),
    shutdown: () => sdk.shutdown(),
  };
}

/**
 * Runs `work` in a span of its own, a child of the current one (or, with `root`, the first of a new
 * trace, linked to `links`); records a failure on it. Attributes and links are made only for a span
 * that is made: calls on the hot paths cost nothing more without tracing. Outside any trace (a projector's poll, a lease
 * renewed) and without tracing, just runs `work`: store calls are traced as parts of a request or a fold.
 */
export function inSpan<T>(
  name: string,
  attributes: () => Attributes,
  work: (span?: Span) => Promise<T>,
  options: { links?: () => Link[]; root?: boolean } = {},
): Promise<T> {
  if (!on || (!options.root && !trace.getActiveSpan())) return work();
  const parent = options.root ? ROOT_CONTEXT : context.active();
  return tracer.startActiveSpan(name, { attributes: attributes(), links: options.links?.(), root: options.root }, parent, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      // Its type and code (a refusal's reason) only: a driver's message may quote values
      // (MongoDB's duplicate key error quotes the key), and a stack begins with the message.
      const { name, code, reason } = error as Error & { code?: unknown; reason?: unknown };
      const said = typeof code === 'string' ? code : reason;
      span.recordException({ name, message: typeof said === 'string' ? said : name });
      span.setStatus({ code: SpanStatusCode.ERROR, message: name });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * A span per command and query, named by its class (`command UpdateCustomerCommand`): what NestJS's
 * instrumentation does for handlers, done for @nestjs/cqrs's buses, which it does not know.
 */
function instrumentCqrs(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { CommandBus, QueryBus } = require('@nestjs/cqrs') as typeof import('@nestjs/cqrs');
  for (const [bus, kind] of [
    [CommandBus.prototype, 'command'],
    [QueryBus.prototype, 'query'],
  ] as const) {
    const execute = Object.getOwnPropertyDescriptor(bus, 'execute')!.value as (this: unknown, message: object) => Promise<unknown>;
    Object.defineProperty(bus, 'execute', {
      writable: true,
      configurable: true,
      value: function (this: unknown, message: object) {
        return inSpan(
          `${kind} ${message.constructor.name}`,
          () => ({ 'cqrs.kind': kind }),
          () => execute.call(this, message),
        );
      },
    });
  }
}

/** Whether traces are exported (see startTracing). */
export const tracingOn = () => on;

/** Runs `work` outside the current trace: background work a request only sets off (keys made ahead). */
export function outsideTraces<T>(work: () => T): T {
  return on ? context.with(ROOT_CONTEXT, work) : work();
}

/** The W3C `traceparent` of the current span, to keep in an event's metadata; undefined without tracing. */
export function currentTraceparent(): string | undefined {
  if (!on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** A span may carry this many links; past it, the first ones are kept. */
const MAX_LINKS = 128;

/** Links to the spans of these `traceparent`s (those events' appends), each once. */
export function linksTo(traceparents: Iterable<string | undefined>): Link[] {
  if (!on) return [];
  const links = new Map<string, Link>();
  for (const traceparent of traceparents) {
    if (!traceparent || links.has(traceparent) || links.size >= MAX_LINKS) continue;
    const spanContext = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
    if (spanContext) links.set(traceparent, { context: spanContext });
  }
  return [...links.values()];
}

/** Links the current span to the spans of these `traceparent`s (the events it serves), each once. */
export function linkCurrentSpanTo(traceparents: Iterable<string | undefined>): void {
  if (on) trace.getActiveSpan()?.addLinks(linksTo(traceparents));
}

/** Span attributes that hold a URL or its query: their parameters' values are redacted as in the logs. */
const URL_ATTRIBUTES = ['url.full', 'http.url', 'http.target', 'url.original'];
const QUERY_ATTRIBUTES = ['url.query'];

/**
 * The exporter behind the SDK's batch processor, given every span with the values of its URLs'
 * query parameters redacted (the access token, the filters: the logs' rule, `redactUrl`),
 * whichever instrumentation set them and whenever: the NestJS instrumentation sets `url.full` to
 * the raw URL, with no hook to change it.
 */
export class RedactingSpanExporter implements SpanExporter {
  constructor(private readonly exporter: SpanExporter) {}

  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    this.exporter.export(spans.map(redacted), done);
  }

  shutdown(): Promise<void> {
    return this.exporter.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.exporter.forceFlush?.() ?? Promise.resolve();
  }
}

function redacted(span: ReadableSpan): ReadableSpan {
  let attributes: Attributes | undefined;
  for (const [key, value] of Object.entries(span.attributes)) {
    if (typeof value !== 'string') continue;
    const safe = URL_ATTRIBUTES.includes(key) ? redactUrl(value) : QUERY_ATTRIBUTES.includes(key) ? redactUrl(`?${value}`).slice(1) : value;
    if (safe !== value) (attributes ??= { ...span.attributes })[key] = safe;
  }
  // The span as it was, but for its attributes: its methods and other fields come from it.
  return attributes ? (Object.create(span, { attributes: { value: attributes, enumerable: true } }) as ReadableSpan) : span;
}
