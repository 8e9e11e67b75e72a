import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One span as received over OTLP/HTTP JSON, its attributes and its resource's flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
  /** The resource's attributes: service.name, process.pid, ... */
  resource: Record<string, unknown>;
  /** Status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

/** One request the receiver got, as it came (decompressed if it was gzipped). */
export interface ReceivedRequest {
  method: string;
  path: string;
  contentType: string;
  body: Buffer;
}

/**
 * An OpenTelemetry collector's OTLP/HTTP endpoint, in this process: it answers every export with
 * success and keeps what it got. Spans are decoded from OTLP/JSON (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`);
 * protobuf requests (the default protocol) are kept as bytes only, which still shows whether a
 * string was sent, since protobuf writes strings as they are.
 */
export interface OtlpReceiver {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT: the exporter adds /v1/traces. */
  url: string;
  requests: ReceivedRequest[];
  /** Every span received so far in JSON. */
  spans(): ReceivedSpan[];
  /** The spans received so far once `check` holds of them (polled), else the failure after `ms`. */
  waitFor(check: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  /** Where each of `values` occurs in anything received (bodies, paths, content types), as `value: excerpt`. */
  occurrences(values: string[]): string[];
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1, on `port` (0: one of the system's choosing). */
export async function startOtlpReceiver(port = 0): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const decoded: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    readBody(req).then(
      (body) => {
        const contentType = String(req.headers['content-type'] ?? '');
        requests.push({ method: req.method ?? '', path: req.url ?? '', contentType, body });
        if (contentType.includes('json')) {
          try {
            decoded.push(...spansOf(JSON.parse(body.toString('utf8'))));
          } catch {
            // Kept as bytes: occurrences() still reads it.
          }
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else {
          // An empty ExportTraceServiceResponse is zero bytes.
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        }
      },
      () => res.writeHead(400).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const waitFor = async (check: (spans: ReceivedSpan[]) => boolean, ms = 15_000): Promise<ReceivedSpan[]> => {
    const until = Date.now() + ms;
    while (!check(decoded)) {
      if (Date.now() > until) throw new Error(`the spans received never passed the check; got:\n${drawSpans(decoded)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return [...decoded];
  };

  const occurrences = (values: string[]): string[] => {
    const found: string[] = [];
    for (const r of requests) {
      const text = `${r.method} ${r.path} ${r.contentType}\n${r.body.toString('latin1')}`;
      for (const value of values) {
        const at = text.toLowerCase().indexOf(value.toLowerCase());
        if (at >= 0) found.push(`${value}: …${text.slice(Math.max(0, at - 80), at + value.length + 40)}…`);
      }
    }
    return found;
  };

  return {
    url,
    requests,
    spans: () => [...decoded],
    waitFor,
    occurrences,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values?.map(valueOf);
const attributesOf = (attributes: OtlpAttributes): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map(({ key, value }) => [key, valueOf(value)]));

/** The spans of an ExportTraceServiceRequest in OTLP/JSON (ids in hex, as the JSON encoding has them). */
function spansOf(request: {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttributes };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        attributes?: OtlpAttributes;
        links?: { traceId: string; spanId: string }[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = attributesOf(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId || undefined,
        name: s.name,
        kind: s.kind,
        startNs: BigInt(s.startTimeUnixNano),
        endNs: BigInt(s.endTimeUnixNano),
        attributes: attributesOf(s.attributes),
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        resource,
        status: s.status?.code ?? 0,
      })),
    );
  });
}

/**
 * The spans as trees, one per trace, a line per span: its name, duration, process and links
 * (`→ trace 1a2b…/span 3c4d…`). For failure messages, and the report of what one create gives.
 */
export function drawSpans(spans: ReceivedSpan[], options: { attributes?: boolean } = {}): string {
  const byParent = new Map<string | undefined, ReceivedSpan[]>();
  const names = new Map(spans.map((s) => [s.spanId, s.name]));
  const ids = new Set(names.keys());
  for (const span of [...spans].sort((a, b) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0))) {
    // A span whose parent was not received (another process's, a remote caller's) starts a tree.
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const draw = (span: ReceivedSpan, depth: number) => {
    const ms = Number(span.endNs - span.startNs) / 1e6;
    const links = span.links
      .map((l) => ` → link to ${names.has(l.spanId) ? `“${names.get(l.spanId)}” in ` : ''}trace ${l.traceId.slice(0, 8)}…/span ${l.spanId.slice(0, 8)}…`)
      .join('');
    const attributes = options.attributes && Object.keys(span.attributes).length ? ` ${JSON.stringify(span.attributes)}` : '';
    const head = depth === 0 ? `[trace ${span.traceId.slice(0, 8)}… pid ${String(span.resource['process.pid'])}] ` : '';
    lines.push(`${'  '.repeat(depth)}${head}${span.name} ${ms.toFixed(2)} ms${links}${attributes}`);
    for (const child of byParent.get(span.spanId) ?? []) draw(child, depth + 1);
  };
  for (const root of byParent.get(undefined) ?? []) draw(root, 0);
  return lines.join('\n');
}
