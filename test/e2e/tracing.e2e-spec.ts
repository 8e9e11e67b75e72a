/**
 * Traces (issue 38), end to end: the built service as a real process, exporting over OTLP/HTTP to
 * a receiver in this process (test/support/otlp-receiver.ts). One create's span tree, an incoming
 * `traceparent` honoured, the folds and the feed page linked to the appending request, a link
 * across the processes of WORKERS=2, nothing personal or secret in anything exported, trace ids
 * in the log lines, and no exporter at all when tracing is off.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { ChildService, runFailingStart, startChildService } from '../support/child-service';
import { runCli } from '../support/cli';
import { startInMemoryEventStoreDb } from '../support/scripted-eventstoredb';
import { drawSpans, OtlpReceiver, ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver';
import { jsonRequest, RawResponse, rawRequest } from '../support/raw-http';
import { describeUnlessWorkers, RUN_SUFFIX } from '../support/stores';
import { makeDataDir } from '../support/test-app';

const TIMEOUT_MS = 120_000;
/** A token of its own, long and unlike anything else, so that finding it anywhere means it leaked. */
const TOKEN = `tracing-secret-${randomBytes(12).toString('hex')}`;
/** Of its own per run on the live stores, which keep every run's records (see stores.ts): the feed's first page is this run's. */
const ACCOUNT = `account-tracing${RUN_SUFFIX}`;
/** A new connection per request, so the requests to one port spread over its workers. */
const noKeepAlive = new Agent({ keepAlive: false });
afterAll(() => noKeepAlive.destroy());

/** Exports soon after each span ends, not after the SDK's default 5 s. */
const tracingEnv = (receiver: OtlpReceiver, protocol: string | null = 'http/json'): NodeJS.ProcessEnv => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  ...(protocol ? { OTEL_EXPORTER_OTLP_PROTOCOL: protocol } : {}),
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

const send = (service: ChildService, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const req = jsonRequest(method, path, TOKEN, body);
  return rawRequest(service.url, { ...req, headers: { ...req.headers, ...headers } }, noKeepAlive);
};
const json = (res: RawResponse) => JSON.parse(res.text);

/** A W3C traceparent of a caller's span, sampled. */
function callerContext(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

const inTrace = (spans: ReceivedSpan[], traceId: string) => spans.filter((s) => s.traceId === traceId);
const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const linksTo = (span: ReceivedSpan, traceId: string) => span.links.some((l) => l.traceId === traceId);
/** The chain of names from the trace's first span down to `span`. */
function pathOf(spans: ReceivedSpan[], span: ReceivedSpan): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const names = [span.name];
  for (let s = byId.get(span.parentSpanId ?? ''); s; s = byId.get(s.parentSpanId ?? '')) names.unshift(s.name);
  return names;
}

async function stop(service: ChildService): Promise<void> {
  if (service.process.exitCode === null && service.process.signalCode === null) service.process.kill('SIGTERM');
  await service.exited;
}

describeUnlessWorkers('traces over OTLP', 'it starts services of its own, with WORKERS=1 and WORKERS=2 as each test needs', () => {
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = makeDataDir();
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const start = (receiver: OtlpReceiver | undefined, env: NodeJS.ProcessEnv = {}) =>
    startChildService(dataDir(), {
      WORKERS: '1',
      ACCESS_TOKENS: `${TOKEN}:${ACCOUNT}`,
      LOG_LEVEL: 'info',
      ...(receiver ? tracingEnv(receiver) : {}),
      ...env,
    });

  describe('one service exporting OTLP/JSON', () => {
    let receiver: OtlpReceiver;
    let service: ChildService;
    beforeAll(async () => {
      receiver = await startOtlpReceiver();
      service = await start(receiver);
    }, TIMEOUT_MS);
    afterAll(async () => {
      if (service) await stop(service);
      await receiver?.close();
    }, TIMEOUT_MS);

    it(
      'traces a create from the caller’s traceparent through the command, the key store and the append to the wait for the read models; the folds and the feed page link to it',
      async () => {
        expect(service.output()).toContain(`Exporting traces to ${receiver.url} (OpenTelemetry, OTLP)`);
        const caller = callerContext();
        const created = await send(service, 'POST', '/v1/customers', { name: 'Ada Lovelace', email: 'ada@example.com' }, { traceparent: caller.traceparent });
        expect(created.status).toBe(201);
        const id = json(created).data.Customer.id as string;

        // The caller's trace id is kept, and the server span is the child of the caller's span.
        const spans = await receiver.waitFor(
          (all) =>
            named(inTrace(all, caller.traceId), 'POST /v1/customers').length > 0 &&
            ['fold customers', 'fold feed'].every((name) => all.some((s) => s.name === name && linksTo(s, caller.traceId))),
        );
        const trace = inTrace(spans, caller.traceId);
        const server = trace.find((s) => s.kind === 2)!;
        expect(server).toMatchObject({ parentSpanId: caller.spanId, name: 'POST /v1/customers' });
        expect(server.attributes).toMatchObject({ 'http.route': '/v1/customers' });
        expect(server.resource).toMatchObject({ 'service.name': 'profiles-customers-service', 'process.pid': service.process.pid });

        // The new record's data key, made before the command (the first create of a fresh service
        // makes it then; later ones take keys made ahead, outside any request's trace).
        expect(pathOf(trace, named(trace, 'key store obtain')[0])[0]).toBe('POST /v1/customers');
        const command = named(trace, 'command CreateCustomerCommand')[0];
        expect(pathOf(trace, command)[0]).toBe('POST /v1/customers');
        // Under the command: the append, then the wait for the read models.
        for (const name of ['event store append', 'wait for read models']) {
          expect(pathOf(trace, named(trace, name)[0])).toEqual([...pathOf(trace, command), name]);
        }
        const append = named(trace, 'event store append')[0];
        expect(append.attributes).toEqual({
          'event_store.stream': expect.stringContaining(id),
          'event_store.expected_revision': 'no_stream',
          'event_store.events': 1,
          'event_store.revision': 0,
          'event_store.position': expect.stringMatching(/^\d+\/\d+$/),
        });
        expect(named(trace, 'wait for read models')[0].attributes).toMatchObject({ 'event_store.position': append.attributes['event_store.position'] });
        // The answer is the command's own outcome: nothing read back.
        expect(named(trace, 'query GetCustomerQuery')).toEqual([]);
        expect(named(trace, 'read store get')).toEqual([]);
        expect(named(trace, 'event store read')).toEqual([]);

        // The folds are traces of their own, each linked to the span that appended the event.
        const linked = new Set(trace.map((s) => s.spanId));
        for (const name of ['fold customers', 'fold feed']) {
          const fold = spans.find((s) => s.name === name && linksTo(s, caller.traceId));
          expect(fold).toBeDefined();
          expect(fold!.traceId).not.toBe(caller.traceId);
          expect(fold!.parentSpanId).toBeUndefined();
          expect(linked.has(fold!.links.find((l) => l.traceId === caller.traceId)!.spanId)).toBe(true);
          expect(fold!.attributes).toMatchObject({ 'projection.name': name.split(' ')[1], 'projection.events': 1 });
          expect(inTrace(spans, fold!.traceId).map((s) => s.name)).toContain('read store commit');
        }

        // The feed page that serves the event links to its append too.
        const reader = callerContext();
        const page = await send(service, 'GET', '/v1/events?limit=100', undefined, { traceparent: reader.traceparent });
        expect(page.status).toBe(200);
        const withPage = await receiver.waitFor((all) => inTrace(all, reader.traceId).some((s) => linksTo(s, caller.traceId)));
        const linking = inTrace(withPage, reader.traceId).find((s) => linksTo(s, caller.traceId))!;
        expect(linked.has(linking.links.find((l) => l.traceId === caller.traceId)!.spanId)).toBe(true);

        // With SHOW_TRACE=1: what one create gives, drawn (a passing run prints nothing else).
        const folds = withPage.filter((s) => s.name.startsWith('fold ') && linksTo(s, caller.traceId)).flatMap((f) => inTrace(withPage, f.traceId));
        if (process.env.SHOW_TRACE)
          process.stdout.write(
            `\nOne create, as the receiver got it:\n${drawSpans([...trace, ...folds, ...inTrace(withPage, reader.traceId)], { attributes: process.env.SHOW_TRACE === 'attributes' })}\n`,
          );
      },
      TIMEOUT_MS,
    );

    it(
      'writes the request’s trace and span ids into its log lines',
      async () => {
        const caller = callerContext();
        const requestId = `tracing-log-${randomBytes(4).toString('hex')}`;
        expect(
          (
            await send(
              service,
              'POST',
              '/v1/customers',
              { name: 'Grace Hopper', email: 'grace@example.com' },
              { traceparent: caller.traceparent, 'x-request-id': requestId },
            )
          ).status,
        ).toBe(201);
        const spans = await receiver.waitFor((all) => inTrace(all, caller.traceId).some((s) => s.kind === 2));
        const line = JSON.parse((await service.waitForOutput(new RegExp(`^\\{.*"requestId":"${requestId}".*\\}$`, 'm')))[0]);
        expect(line.trace_id).toBe(caller.traceId);
        // A span of the request's own trace (the server's, or one within it).
        expect(inTrace(spans, caller.traceId).map((s) => s.spanId)).toContain(line.span_id);
        // Lines outside any request carry none.
        const startLine = JSON.parse(
          service
            .output()
            .split('\n')
            .find((l) => l.includes('Listening on'))!,
        );
        expect(startLine.trace_id).toBeUndefined();
      },
      TIMEOUT_MS,
    );

    it(
      'exports nothing personal or secret: not the token (in the query or the header), nor filter values, nor field values',
      async () => {
        const secrets = {
          name: 'Zebediah Quillfeather',
          email: 'zebediah.quillfeather@example.org',
          mobile: '09127654321',
          company: 'Quillfeather Secret Holdings',
          otherEmail: 'hidden.person@example.net',
        };
        const { name, email, mobile, company } = secrets;
        const created = await send(service, 'POST', '/v1/customers', { name, email, mobile, company });
        expect(created.status).toBe(201);
        const id = json(created).data.Customer.id as string;
        expect((await send(service, 'PUT', `/v1/customers/${id}`, { email: secrets.otherEmail }, { 'if-match': '"0"' })).status).toBe(200);
        const noHeader = (method: string, path: string) => rawRequest(service.url, { method, path }, noKeepAlive);
        const q = (value: string) => encodeURIComponent(value);
        const requests: [string, Promise<RawResponse>][] = [
          ['token in the query', noHeader('GET', `/v1/customers/${id}?access_token=${TOKEN}`)],
          ['token in the query, name escaped', noHeader('GET', `/v1/customers?acc%65ss_token=${TOKEN}&email=${q(email)}`)],
          ['email filter', send(service, 'GET', `/v1/customers?email=${q(email)}&limit=5`)],
          ['email filter, raw @', send(service, 'GET', `/v1/customers?email=${email}`)],
          ['mobile filter', send(service, 'GET', `/v1/customers?mobile=${mobile}`)],
          ['company filter', send(service, 'GET', `/v1/customers?company=${q(company)}`)],
          ['feed', send(service, 'GET', `/v1/events?limit=100&access_token=${TOKEN}`)],
          ['history', send(service, 'GET', `/v1/customers/${id}/history`)],
          // Refused requests: their errors are recorded on spans, never with the values.
          ['bad email in a body', send(service, 'POST', '/v1/customers', { name, email: `${secrets.otherEmail}@@` })],
          ['stale If-Match', send(service, 'PUT', `/v1/customers/${id}`, { name }, { 'if-match': '"0"' })],
          ['bad token', rawRequest(service.url, { method: 'GET', path: '/v1/customers', headers: { authorization: `Bearer ${TOKEN}x` } }, noKeepAlive)],
        ];
        for (const [what, response] of requests) expect([what, (await response).status < 500]).toEqual([what, true]);
        expect((await requests.find(([what]) => what === 'stale If-Match')![1]).status).toBe(412);
        // Every span of those requests is exported: the last one's server span is there.
        await receiver.waitFor(
          (all) =>
            all.some((s) => s.kind === 2 && s.attributes['http.response.status_code'] === 401) &&
            all.some((s) => s.name === 'query GetCustomerHistoryQuery' || s.name.includes('History')),
        );
        await new Promise((r) => setTimeout(r, 500));

        // The refused update's command span failed, its error recorded by type and code.
        expect(receiver.spans().some((s) => s.name === 'command UpdateCustomerCommand' && s.status === 2)).toBe(true);
        const values = [TOKEN, ...Object.values(secrets), q(email), email.split('@')[0], secrets.otherEmail.split('@')[0], 'Quillfeather'];
        expect(receiver.occurrences(values)).toEqual([]);
        // What was redacted is still there as a name: the query parameters, without their values.
        const urls = receiver
          .spans()
          .flatMap((s) => [s.attributes['url.full'], s.attributes['url.query'], s.attributes['http.target'], s.attributes['http.url']]);
        expect(urls.filter((u) => typeof u === 'string' && u.includes('email=[REDACTED]')).length).toBeGreaterThan(0);
      },
      TIMEOUT_MS,
    );
  });

  it(
    'links an update served by one worker to its fold by the other (WORKERS=2)',
    async () => {
      const receiver = await startOtlpReceiver();
      const service = await start(receiver, { WORKERS: '2' });
      try {
        const created = await send(service, 'POST', '/v1/customers', { name: 'Ada', email: 'ada@example.com' });
        expect(created.status).toBe(201);
        const id = json(created).data.Customer.id as string;
        // New connections take turns between the workers: some updates land on the one that does not fold.
        const callers = Array.from({ length: 8 }, callerContext);
        for (const [n, caller] of callers.entries()) {
          const res = await send(service, 'PUT', `/v1/customers/${id}`, { name: `Ada ${n}` }, { traceparent: caller.traceparent });
          expect(res.status).toBe(200);
        }
        // Each update's server span (exported once its answer is sent) and the fold linked to it.
        const spans = await receiver.waitFor((all) =>
          callers.every(
            (c) => all.some((s) => s.traceId === c.traceId && s.kind === 2) && all.some((s) => s.name === 'fold customers' && linksTo(s, c.traceId)),
          ),
        );
        const servedBy = (traceId: string) => inTrace(spans, traceId).find((s) => s.kind === 2)!.resource['process.pid'];
        const foldedBy = (traceId: string) => spans.find((s) => s.name === 'fold customers' && linksTo(s, traceId))!.resource['process.pid'];
        const pids = callers.map((c) => [servedBy(c.traceId), foldedBy(c.traceId)]);
        // Two workers, neither of them the primary (which serves nothing).
        expect(new Set(pids.flat()).size).toBe(2);
        expect(pids.flat()).not.toContain(service.process.pid);
        // One folding worker, and at least one update served by the other and linked from it.
        expect(new Set(pids.map(([, folder]) => folder)).size).toBe(1);
        expect(pids.filter(([server, folder]) => server !== folder).length).toBeGreaterThan(0);
      } finally {
        await stop(service);
        await receiver.close();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'exports over the default protocol, OTLP/HTTP with protobuf, with the spans’ names and without the token',
    async () => {
      const receiver = await startOtlpReceiver();
      const service = await start(receiver, { OTEL_EXPORTER_OTLP_PROTOCOL: undefined, ...tracingEnv(receiver, null) });
      try {
        const created = await send(service, 'POST', '/v1/customers?access_token=' + TOKEN, { name: 'Ada Proto', email: 'ada.proto@example.com' });
        expect(created.status).toBe(201);
        const until = Date.now() + 15_000;
        while (receiver.occurrences(['fold customers', 'event store append']).length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        expect(receiver.requests.length).toBeGreaterThan(0);
        expect(receiver.requests.filter((r) => r.path !== '/v1/traces' || r.contentType !== 'application/x-protobuf')).toEqual([]);
        expect(receiver.occurrences(['fold customers', 'event store append', 'POST /v1/customers'])).toHaveLength(3);
        expect(receiver.occurrences([TOKEN, 'Ada Proto', 'ada.proto'])).toEqual([]);
      } finally {
        await stop(service);
        await receiver.close();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'links the fold to the appending request over the EventStoreDB protocol too: the trace context goes through the event’s metadata (scripted endpoint, not a server)',
    async () => {
      const eventStoreDb = await startInMemoryEventStoreDb();
      const receiver = await startOtlpReceiver();
      const service = await start(receiver, { EVENTSTORE_CONNECTION_STRING: eventStoreDb.connectionString, STORE_TIMEOUT_MS: '5000' });
      try {
        const caller = callerContext();
        const created = await send(service, 'POST', '/v1/customers', { email: 'esdb.trace@example.com' }, { traceparent: caller.traceparent });
        expect(created.status).toBe(201);
        const spans = await receiver.waitFor((all) =>
          ['fold customers', 'fold feed'].every((name) => all.some((s) => s.name === name && linksTo(s, caller.traceId))),
        );
        const append = named(inTrace(spans, caller.traceId), 'event store append')[0];
        // The position is the log's: byte offsets, as EventStoreDB's are, not a sequence number.
        expect(append.attributes['event_store.position']).toMatch(/^\d{5,}\/\d{5,}$/);
        // What the endpoint stored: the event's metadata carries the request's trace context.
        const stored = eventStoreDb.log.find((e) => e.streamId === append.attributes['event_store.stream']);
        expect(JSON.stringify(stored?.metadata)).toContain(caller.traceId);
      } finally {
        await stop(service);
        await receiver.close();
        await eventStoreDb.close();
      }
    },
    TIMEOUT_MS,
  );

  it(
    'traces a rebuild by the CLI as one trace: a span for the rebuild, one per batch beneath it',
    async () => {
      const dir = dataDir();
      const service = await startChildService(dir, { WORKERS: '1', ACCESS_TOKENS: `${TOKEN}:${ACCOUNT}` });
      try {
        for (let i = 0; i < 3; i++) expect((await send(service, 'POST', '/v1/customers', { name: `R${i}`, email: `r${i}@example.com` })).status).toBe(201);
      } finally {
        await stop(service);
      }
      const receiver = await startOtlpReceiver();
      try {
        const run = await runCli(['projections', 'rebuild', 'all', '--grace-seconds', '0'], dir, tracingEnv(receiver));
        expect(run.code).toBe(0);
        // Exported before the command exits: no waiting here.
        const [rebuild, ...others] = named(receiver.spans(), 'rebuild');
        expect(others).toEqual([]);
        expect(rebuild.parentSpanId ?? '').toBe('');
        const batches = named(receiver.spans(), 'rebuild batch');
        expect(batches.length).toBeGreaterThan(0);
        for (const batch of batches) expect(pathOf(receiver.spans(), batch)).toEqual(['rebuild', 'rebuild batch']);
        expect(batches.every((b) => b.traceId === rebuild.traceId)).toBe(true);
        expect(receiver.occurrences(['r0@example.com', 'R0', TOKEN])).toEqual([]);
      } finally {
        await receiver.close();
      }
    },
    TIMEOUT_MS,
  );

  describe('off', () => {
    /** A create, a read and a list, then the time the SDK would take to export them. */
    async function someRequests(service: ChildService): Promise<void> {
      const created = await send(service, 'POST', '/v1/customers', { name: 'Ada', email: 'ada@example.com' }, { traceparent: callerContext().traceparent });
      expect(created.status).toBe(201);
      expect((await send(service, 'GET', `/v1/customers/${json(created).data.Customer.id}`)).status).toBe(200);
      expect((await send(service, 'GET', '/v1/customers')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1000));
    }

    it(
      'starts no exporter with no OTEL_* variable set: nothing reaches the default endpoint, no log line has a trace id',
      async () => {
        // The default endpoint, localhost:4318, if nothing else on the machine has it.
        const receiver = await startOtlpReceiver(4318).catch(() => undefined);
        const service = await start(undefined);
        try {
          await someRequests(service);
          await stop(service);
          expect(service.output()).not.toContain('Exporting traces');
          expect(service.output()).not.toContain('trace_id');
          if (receiver) expect(receiver.requests).toEqual([]);
        } finally {
          await stop(service);
          await receiver?.close();
        }
      },
      TIMEOUT_MS,
    );

    it.each([
      ['OTEL_SDK_DISABLED=true', { OTEL_SDK_DISABLED: 'true' }],
      ['OTEL_TRACES_EXPORTER=none', { OTEL_TRACES_EXPORTER: 'none' }],
    ])(
      'starts no exporter with an endpoint set and %s',
      async (_, env) => {
        const receiver = await startOtlpReceiver();
        const service = await start(receiver, env);
        try {
          await someRequests(service);
          await stop(service);
          expect(service.output()).not.toContain('Exporting traces');
          expect(receiver.requests).toEqual([]);
        } finally {
          await stop(service);
          await receiver.close();
        }
      },
      TIMEOUT_MS,
    );

    it.each([
      ['OTEL_EXPORTER_OTLP_PROTOCOL', { OTEL_EXPORTER_OTLP_PROTOCOL: 'carrier-pigeon' }],
      ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'carrier-pigeon' }],
    ])(
      'refuses to start with a protocol it cannot export in, naming %s',
      async (variable, env) => {
        const { code, output } = await runFailingStart(dataDir(), { WORKERS: '1', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', ...env });
        expect(code).toBe(1);
        expect(output).toMatch(new RegExp(`^Configuration error: ${variable} must be one of http/protobuf, http/json, grpc; got "carrier-pigeon"$`, 'm'));
      },
      TIMEOUT_MS,
    );
  });
});
