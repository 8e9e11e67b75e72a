import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { APP_CONFIG, AppConfig } from '../../src/config/config';
import { EVENT_STORE, EventStore } from '../../src/event-store/event-store.port';
import { uid } from '../support/http-assertions';
import { describeUnlessWorkers, LIVE_STORES } from '../support/stores';
import { freshApp, TOKENS, withToken } from '../support/test-app';

/** The value of the sample with exactly these labels (besides service_instance, on every one), or undefined when there is none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const match = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/);
    if (!match || match[1] !== name) continue;
    const got = (match[2] ? match[2].split(/,(?=[a-zA-Z_]\w*=")/) : []).filter((l) => !l.startsWith('service_instance='));
    if (got.length === wanted.length && wanted.every((w) => got.includes(w))) return Number(match[3]);
  }
  return undefined;
}

describeUnlessWorkers(
  'GET /metrics',
  "its figures are one process's: with WORKERS each worker counts its own, named by service_instance, which several-instances.e2e-spec.ts checks",
  () => {
    const app = freshApp();

    it('answers Prometheus text without a token, with request, event, store, projection and process figures', async () => {
      const { http } = app();
      const created = await http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@example.com' }).expect(201);
      const id: string = created.body.data.Customer.id;
      await http.get(withToken(`customers/${id}`)).expect(200);
      await http.get(withToken(`customers/${id}`)).expect(200);
      await http.get(withToken('customers/00000000-0000-4000-8000-000000000000')).expect(404);
      await http.get('/v1/customers').expect(401);
      await http
        .post(withToken('profiles'))
        .send({ name: 'Shop', slug: uid('metricshop') })
        .expect(201);

      const res = await http.get('/metrics').expect(200);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      const text = res.text;

      // Requests by route template and status; never by the raw URL or the token.
      expect(sample(text, 'http_requests_total', { method: 'POST', route: '/v1/customers', status: '201' })).toBe(1);
      expect(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/customers/:id', status: '200' })).toBe(2);
      expect(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/customers/:id', status: '404' })).toBe(1);
      expect(sample(text, 'http_requests_total', { method: 'GET', route: 'none', status: '401' })).toBe(1);
      expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/v1/customers/:id', status: '200' })).toBe(2);
      expect(text).not.toContain(id);
      for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);

      // Events appended, by type (the profile also reserved its slug).
      expect(sample(text, 'events_appended_total', { type: 'CustomerCreated' })).toBe(1);
      expect(sample(text, 'events_appended_total', { type: 'ProfileCreated' })).toBe(1);
      expect(sample(text, 'events_appended_total', { type: 'SlugReserved' })).toBe(1);

      // Store call latencies, by operation.
      expect(sample(text, 'event_store_call_duration_seconds_count', { operation: 'appendToStream', outcome: 'ok' })).toBe(3);
      expect(sample(text, 'read_store_call_duration_seconds_count', { operation: 'get', outcome: 'ok' })).toBeGreaterThanOrEqual(3);
      expect(sample(text, 'read_store_call_duration_seconds_count', { operation: 'commit', outcome: 'ok' })).toBeGreaterThanOrEqual(2);

      if (LIVE_STORES) {
        // EventStoreDB's positions are byte offsets: the lag in events is unknown, so it is left out.
        expect(text).not.toMatch(/^projection_lag\{/m);
      } else {
        // Each write waited for its projections, so both stand at the head with no lag.
        const head = await app().app.get<EventStore>(EVENT_STORE).headPosition();
        for (const projection of ['customers', 'profiles']) {
          expect(sample(text, 'projection_checkpoint', { projection })).toBe(Number(head.commit));
          expect(sample(text, 'projection_lag', { projection })).toBe(0);
        }
      }

      // Every sample names the instance that counted it; this one folds both read models.
      const { instanceId } = app().app.get<AppConfig>(APP_CONFIG);
      const samples = text.split('\n').filter((line) => line && !line.startsWith('#'));
      expect(samples.filter((line) => !line.includes(`service_instance="${instanceId}"`))).toEqual([]);
      for (const projection of ['customers', 'profiles']) expect(sample(text, 'projection_folding', { projection })).toBe(1);

      // Node's process metrics.
      expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    });

    it('splits the resident size by what holds it, adding up to what /proc says of the process', async () => {
      const { http } = app();
      const text = (await http.get('/metrics').expect(200)).text;
      const rollup = (() => {
        try {
          return readFileSync('/proc/self/smaps_rollup', 'latin1');
        } catch {
          return undefined;
        }
      })();
      if (!rollup) {
        // Not Linux: the series is left out rather than made up.
        expect(text).not.toMatch(/^process_memory_bytes\{/m);
        return;
      }
      const kinds = ['resident', 'anonymous', 'file', 'js_heap', 'native'] as const;
      const mb = Object.fromEntries(kinds.map((kind) => [kind, sample(text, 'process_memory_bytes', { kind })])) as Record<(typeof kinds)[number], number>;
      for (const kind of kinds) expect(mb[kind]).toBeGreaterThan(0);
      // The parts add up: resident = anonymous + file, anonymous = js_heap + native.
      expect(mb.anonymous + mb.file).toBe(mb.resident);
      expect(mb.js_heap + mb.native).toBe(mb.anonymous);
      // The app runs in this process (the test's): its figures (from /proc/self/status) are this process's, as smaps_rollup sums them a moment later.
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/smaps_rollup', 'latin1'))![1]) * 1024;
      expect(Math.abs(mb.resident - kb('Rss')) / kb('Rss')).toBeLessThan(0.2);
      expect(Math.abs(mb.anonymous - kb('Anonymous')) / kb('Anonymous')).toBeLessThan(0.2);
      // The heap is V8's committed heap of this thread, at most what Node reports as the heap's total.
      expect(mb.js_heap).toBeLessThanOrEqual(process.memoryUsage().heapTotal * 1.2);
      expect(mb.js_heap).toBeGreaterThan(process.memoryUsage().heapUsed * 0.5);
    });

    it('reports how late the event loop ran since the last scrape, net of its sampling interval', async () => {
      const { http } = app();
      await http.get('/metrics').expect(200); // a new window starts
      // The app runs in this process: holding its event loop for 150 ms is a stall of the service's.
      const until = performance.now() + 150;
      while (performance.now() < until);
      await sleep(20);
      const text = (await http.get('/metrics').expect(200)).text;
      const longest = sample(text, 'event_loop_delay_seconds', { quantile: '1' })!;
      expect(longest).toBeGreaterThanOrEqual(0.1);
      expect(longest).toBeLessThan(5);
      expect(sample(text, 'event_loop_delay_seconds', { quantile: '0.5' })).toBeLessThan(longest);
      expect(sample(text, 'event_loop_delay_seconds', { quantile: '0.99' })).toBeLessThanOrEqual(longest);
      // That scrape ended the window: the next one does not count the stall again.
      await sleep(100);
      expect(sample((await http.get('/metrics').expect(200)).text, 'event_loop_delay_seconds', { quantile: '1' })).toBeLessThan(longest);
    });

    it('counts itself by its route, and is not under /v1', async () => {
      const { http } = app();
      await http.get('/metrics').expect(200);
      const text = (await http.get('/metrics').expect(200)).text;
      expect(sample(text, 'http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
      await http.get(withToken('metrics')).expect(404);
    });
  },
);
