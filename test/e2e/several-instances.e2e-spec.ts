/**
 * Several instances of the service on one store configuration, as real processes: WORKERS=2
 * behind one port, separate services side by side, the folding one killed with kill -9 while
 * clients write, and a rebuild beside three of them. On SQLite they share one data directory; with
 * TEST_STORES=live (npm run test:integration) they share EventStoreDB and MongoDB, and the check
 * that the read models equal a fresh rebuild, which reads the SQLite file, is left out.
 */
import { readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { ChildService, startChildService } from '../support/child-service';
import { runCli, spawnCli } from '../support/cli';
import { jsonRequest, RawResponse, rawRequest } from '../support/raw-http';
import { expectReadModelsEqualARebuild } from '../support/rebuild-check';
import { uid } from '../support/http-assertions';
import { describeUnlessWorkers, LIVE_STORES, liveStoreEnv } from '../support/stores';
import { makeDataDir, TOKENS } from '../support/test-app';

const TIMEOUT_MS = 180_000;
/** A new connection per request, so the requests to one port spread over its workers. */
const noKeepAlive = new Agent({ keepAlive: false });
afterAll(() => noKeepAlive.destroy());

const send = (service: ChildService, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const req = jsonRequest(method, path, TOKENS.a, body);
  return rawRequest(service.url, { ...req, headers: { ...req.headers, ...headers } }, noKeepAlive);
};
const json = (res: RawResponse) => JSON.parse(res.text);
const customerOf = (res: RawResponse) => json(res).data[0]?.Customer ?? json(res).data.Customer;

/** The instance that answered: /metrics names it on every sample. */
async function instanceOf(service: ChildService): Promise<string> {
  const text = (await rawRequest(service.url, { method: 'GET', path: '/metrics' }, noKeepAlive)).text;
  return text.match(/service_instance="([^"]+)"/)![1];
}

/** Which read models this instance folds, by name, from /health/ready. */
async function foldingOf(service: ChildService): Promise<Record<string, boolean>> {
  const ready = json(await rawRequest(service.url, { method: 'GET', path: '/health/ready' }, noKeepAlive));
  return Object.fromEntries(ready.projections.map((p: { name: string; folding: boolean }) => [p.name, p.folding]));
}

/** Polls until `check` passes; a failure after the time left is the one reported. */
async function eventually(check: () => Promise<void>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function stop(...services: ChildService[]): Promise<void> {
  for (const s of services) if (s.process.exitCode === null && s.process.signalCode === null) s.process.kill('SIGTERM');
  await Promise.all(services.map((s) => s.exited));
}

/** On SQLite: every read model equals a fresh rebuild from the events. */
async function expectRebuildEqualOnSqlite(dir: string): Promise<void> {
  if (!LIVE_STORES) await expectReadModelsEqualARebuild(join(dir, 'service.sqlite'));
}

const generations = async (dir: string): Promise<number[]> =>
  JSON.parse((await runCli(['projections', 'status', '--json'], dir, liveStoreEnv())).stdout).projections.map((p: { generation: number }) => p.generation);

describeUnlessWorkers('several instances on one store configuration', 'it starts instances of its own, the same in either mode', () => {
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = makeDataDir();
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  describe('WORKERS=2 behind one port', () => {
    it(
      'serves the interface from both workers: writes, reads, lists, conflicts, idempotent retries and erasures, whichever worker answers',
      async () => {
        const service = await startChildService(dataDir(), { WORKERS: '2' });
        try {
          await service.waitForOutput(/2 workers serve/);
          const instances = new Set<string>();
          for (let n = 0; n < 12; n++) {
            const email = `w${n}@example.com`;
            const created = await send(service, 'POST', '/v1/customers', { name: `Ada ${n}`, email });
            expect(created.status).toBe(201);
            const { id } = customerOf(created);
            // Each request on a new connection: the read, update and list land on either worker.
            expect(customerOf(await send(service, 'GET', `/v1/customers/${id}`))).toMatchObject({ id, name: `Ada ${n}`, email });
            expect((await send(service, 'PUT', `/v1/customers/${id}`, { name: `Ada ${n}b` }, { 'if-match': '"0"' })).status).toBe(200);
            expect(customerOf(await send(service, 'GET', `/v1/customers/${id}`))).toMatchObject({ name: `Ada ${n}b` });
            const listed = await send(service, 'GET', `/v1/customers?email=${encodeURIComponent(email)}`);
            expect(json(listed).data.map((d: { Customer: { id: string } }) => d.Customer.id)).toEqual([id]);
            expect((await send(service, 'PUT', `/v1/customers/${id}`, { name: 'stale' }, { 'if-match': '"0"' })).status).toBe(412);
            expect((await send(service, 'DELETE', `/v1/customers/${id}`)).status).toBe(200);
            expect((await send(service, 'GET', `/v1/customers/${id}`)).status).toBe(404);

            const slug = uid('shop');
            expect((await send(service, 'POST', '/v1/profiles', { name: 'Shop', slug, email: `shop${n}@example.com` })).status).toBe(201);
            expect((await send(service, 'POST', '/v1/profiles', { name: 'Other', slug: slug.toUpperCase(), email: `other${n}@example.com` })).status).toBe(409);
            const key = { 'idempotency-key': `key-${n}` };
            const first = await send(service, 'POST', '/v1/customers', { email: `idem${n}@example.com` }, key);
            const retry = await send(service, 'POST', '/v1/customers', { email: `idem${n}@example.com` }, key);
            expect([first.status, retry.status]).toEqual([201, 201]);
            expect(customerOf(retry).id).toBe(customerOf(first).id);
            // Erased through one worker: gone on both, whichever had its key cached. (An odd number
            // of requests per turn, so that instanceOf lands on each worker in turn.)
            const erased = customerOf(first).id;
            expect((await send(service, 'POST', `/v1/customers/${erased}/erase`)).status).toBe(200);
            expect((await send(service, 'GET', `/v1/customers/${erased}`)).status).toBe(404);
            expect((await send(service, 'PUT', `/v1/customers/${erased}`, { name: 'back' })).status).toBe(404);
            expect((await send(service, 'DELETE', `/v1/customers/${erased}`)).status).toBe(404);
            expect((await send(service, 'POST', '/v1/customers', { email: `idem${n}@example.com` }, key)).status).toBe(409);
            const history = json(await send(service, 'GET', `/v1/customers/${erased}/history`)).data;
            expect(history.map((e: { event: string; changes: object }) => [e.event, e.changes])).toEqual([
              ['CustomerCreated', { email: null }],
              ['CustomerErased', {}],
            ]);
            instances.add(await instanceOf(service));
          }
          expect(instances.size).toBe(2);
          // Exactly one worker folds each read model.
          const folding: Record<string, boolean>[] = [];
          const seen = new Set<string>();
          await eventually(async () => {
            const instance = await instanceOf(service);
            if (!seen.has(instance)) {
              seen.add(instance);
              folding.push(await foldingOf(service));
            }
            expect(seen.size).toBe(2);
          });
          for (const name of ['customers', 'profiles', 'feed']) expect(folding.filter((f) => f[name])).toHaveLength(1);
        } finally {
          await stop(service);
        }
      },
      TIMEOUT_MS,
    );

    it(
      'decides a write on the record as the other worker left it, rather than being refused first',
      async () => {
        const service = await startChildService(dataDir(), { WORKERS: '2' });
        try {
          await service.waitForOutput(/2 workers serve/);
          const { id } = customerOf(await send(service, 'POST', '/v1/customers', { name: 'Ada', email: 'ada@example.com' }));
          // A new connection for each: the updates land on the workers in turn.
          for (let n = 1; n <= 20; n++) {
            expect((await send(service, 'PUT', `/v1/customers/${id}`, { name: `Ada ${n}` })).status).toBe(200);
          }
          // Each worker's /metrics shows its own counts: ask until both have answered.
          const metricsBy = new Map<string, string>();
          await eventually(async () => {
            const text = (await rawRequest(service.url, { method: 'GET', path: '/metrics' }, noKeepAlive)).text;
            metricsBy.set(text.match(/service_instance="([^"]+)"/)![1], text);
            expect(metricsBy.size).toBe(2);
          });
          /** Each worker's count of the samples with these labels. */
          const count = (name: string, labels: Record<string, string>) =>
            [...metricsBy.values()].map((text) =>
              text
                .split('\n')
                .filter((line) => line.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
                .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0),
            );
          const updatesBy = count('http_request_duration_seconds_count', { method: 'PUT', route: '/v1/customers/:id', status: '200' });
          expect(updatesBy.every((n) => n >= 5)).toBe(true); // both workers wrote
          // Each worker's kept fold of the record is marked behind by the other's news of its append,
          // so its next write reads the events it lacks before deciding. Without the news about 18 of
          // the 20 appends were refused (decided on a stale revision) and decided again; a connection
          // handed over just ahead of the news it should follow may still be.
          const refused = count('event_store_call_duration_seconds_count', { operation: 'appendToStream', outcome: 'error' });
          expect(refused[0] + refused[1]).toBeLessThanOrEqual(3);
          expect(customerOf(await send(service, 'GET', `/v1/customers/${id}`))).toMatchObject({ name: 'Ada 20' });
        } finally {
          await stop(service);
        }
      },
      TIMEOUT_MS,
    );

    it(
      'divides each rate limit among the workers, so the machine allows the configured figure',
      async () => {
        const service = await startChildService(dataDir(), { WORKERS: '2', RATE_LIMIT_REQUESTS: '10', RATE_LIMIT_WINDOW_SECONDS: '600' });
        const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          await service.waitForOutput(/2 workers serve/);
          // One keep-alive connection stays on one worker: its share is 5.
          const onOne: RawResponse[] = [];
          for (let n = 0; n < 6; n++) onOne.push(await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.a), keepAlive));
          expect(onOne.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
          expect(json(onOne[5]).error.message).toMatch(/at most 5 per 600 s/);
          // New connections reach both workers; together they allow no more than the configured 10.
          const statuses: number[] = [];
          for (let n = 0; n < 20; n++) statuses.push((await rawRequest(service.url, jsonRequest('GET', '/v1/customers', TOKENS.b), noKeepAlive)).status);
          expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
          expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(5); // more than one worker's share: both served
          expect(new Set(statuses)).toEqual(new Set([200, 429]));
        } finally {
          keepAlive.destroy();
          await stop(service);
        }
      },
      TIMEOUT_MS,
    );

    it(
      'makes the first-start token once, in the primary, and stops every worker on SIGTERM, exiting 0',
      async () => {
        const dir = dataDir();
        const service = await startChildService(dir, { WORKERS: '2', ACCESS_TOKENS: '' });
        await service.waitForOutput(/2 workers serve/);
        const tokens = readFileSync(join(dir, 'access-token'), 'utf8').trim().split('\n');
        expect(tokens).toHaveLength(1);
        const token = tokens[0].split(':')[0];
        expect(service.output().match(/made an access token/g)).toHaveLength(1);
        expect(service.output()).not.toContain(token); // kept in the file, never printed
        for (let n = 0; n < 4; n++) {
          const res = await rawRequest(service.url, { method: 'GET', path: `/v1/customers?access_token=${token}` }, noKeepAlive);
          expect(res.status).toBe(200);
        }
        const pids = new Set<number>();
        await eventually(async () => {
          pids.add(Number((await instanceOf(service)).split(':')[1]));
          expect(pids.size).toBe(2);
        });
        service.process.kill('SIGTERM');
        expect(await service.exited).toBe(0);
        for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
      },
      TIMEOUT_MS,
    );
  });

  it(
    'reads its writes on any instance: a write to one is in the next read from the other',
    async () => {
      const dir = dataDir();
      const a = await startChildService(dir);
      const b = await startChildService(dir);
      try {
        for (let n = 0; n < 20; n++) {
          const [writer, reader] = n % 2 ? [a, b] : [b, a];
          const created = await send(writer, 'POST', '/v1/customers', { name: `Ada ${n}`, email: `ryw${n}@example.com` });
          expect(created.status).toBe(201);
          const { id } = customerOf(created);
          expect(customerOf(await send(reader, 'GET', `/v1/customers/${id}`))).toMatchObject({ id, name: `Ada ${n}` });
          expect((await send(writer, 'PUT', `/v1/customers/${id}`, { name: `Ada ${n}b` })).status).toBe(200);
          expect(customerOf(await send(reader, 'GET', `/v1/customers/${id}`))).toMatchObject({ name: `Ada ${n}b` });
        }
        const [fa, fb] = [await foldingOf(a), await foldingOf(b)];
        for (const name of ['customers', 'profiles', 'feed']) expect([fa[name], fb[name]].filter(Boolean)).toHaveLength(1);
      } finally {
        await stop(a, b);
      }
    },
    TIMEOUT_MS,
  );

  it(
    'survives a kill -9 of the folding instance under write load: another takes over, no acknowledged write is lost, the read models equal a rebuild',
    async () => {
      const dir = dataDir();
      const env = { PROJECTION_LEASE_MS: '2000' };
      const a = await startChildService(dir, env);
      const b = await startChildService(dir, env);
      const [folder, survivor] = (await foldingOf(a)).customers ? [a, b] : [b, a];
      expect((await foldingOf(survivor)).customers).toBe(false);
      const acknowledged: { id: string; name: string; on: ChildService }[] = [];
      let killed = false;
      let stopping = false;

      /** Writes through `service` until told to stop; only the killed instance may fail a request. */
      const writer = async (service: ChildService, w: number) => {
        for (let n = 0; !stopping; n++) {
          try {
            const res = await send(service, 'POST', '/v1/customers', { name: `w${w} n${n}`, email: `w${w}n${n}@example.com` });
            expect(res.status).toBe(201);
            acknowledged.push({ id: customerOf(res).id, name: `w${w} n${n}`, on: service });
          } catch (error) {
            if (service === folder && killed) return;
            throw error;
          }
        }
      };
      const writers = [writer(folder, 0), writer(folder, 1), writer(survivor, 2), writer(survivor, 3)];
      try {
        await eventually(async () => expect(acknowledged.length).toBeGreaterThan(40));
        killed = true;
        folder.process.kill('SIGKILL');
        expect(await folder.exited).toBeNull();
        // The survivor's writes go on being answered: it takes the lease over and folds them itself.
        const before = acknowledged.filter((w) => w.on === survivor).length;
        await eventually(async () => expect(acknowledged.filter((w) => w.on === survivor).length).toBeGreaterThan(before + 40));
        stopping = true;
        await Promise.all(writers);
        expect(await foldingOf(survivor)).toEqual({ customers: true, profiles: true, feed: true });
        expect(survivor.output()).toMatch(/Took the lease over from \S+, which no longer runs/);

        // Every acknowledged write reads back from the survivor, as written.
        for (const write of acknowledged) {
          expect(customerOf(await send(survivor, 'GET', `/v1/customers/${write.id}`))).toMatchObject({ id: write.id, name: write.name });
        }
        // A write waits for every read model, so after it they hold every event before it.
        expect((await send(survivor, 'POST', '/v1/profiles', { name: 'Sync', slug: uid('sync'), email: 'sync@example.com' })).status).toBe(201);
        await expectRebuildEqualOnSqlite(dir);
      } finally {
        stopping = true;
        await stop(survivor);
      }
    },
    TIMEOUT_MS,
  );

  it(
    'rebuilds beside three instances: every one follows the promotion and goes on reading its writes',
    async () => {
      const dir = dataDir();
      // The rebuild shares two cores with three services and the writers: the point is what it loses, not how fast.
      const env = { READ_YOUR_WRITES_TIMEOUT_MS: '60000' };
      const services = [await startChildService(dir, env), await startChildService(dir, env), await startChildService(dir, env)];
      try {
        const written: string[] = [];
        const write = async (n: number) => {
          const res = await send(services[n % 3], 'POST', '/v1/customers', { name: `c${n}`, email: `c${n}@example.com` });
          expect(res.status).toBe(201);
          const { id } = customerOf(res);
          written.push(id);
          // Read back on another instance.
          expect((await send(services[(n + 1) % 3], 'GET', `/v1/customers/${id}`)).status).toBe(200);
        };
        for (let n = 0; n < 60; n++) await write(n);
        expect((await send(services[0], 'POST', '/v1/profiles', { name: 'Shop', slug: uid('shop'), email: 'shop@example.com' })).status).toBe(201);

        const before = await generations(dir);
        const rebuild = spawnCli(['projections', 'rebuild', 'all', '--grace-seconds', '1'], dir, liveStoreEnv());
        let rebuilding = true;
        const exited = rebuild.exited.finally(() => (rebuilding = false));
        let n = 60;
        while (rebuilding) await write(n++);
        expect(await exited).toBe(0);
        // A new generation of each read model is live (on a live server, past any an interrupted rebuild left).
        const after = await generations(dir);
        expect(after.map((g, k) => g > before[k])).toEqual([true, true, true]);

        // After the promotion: writes through each instance read back on every other one.
        for (let k = 0; k < 6; k++) await write(n++);
        for (const service of services) {
          const list = await send(service, 'GET', '/v1/customers?limit=1');
          expect(Number(list.headers['x-total-count'])).toBe(written.length);
        }
        const folders = await Promise.all(services.map(foldingOf));
        for (const name of ['customers', 'profiles', 'feed']) expect(folders.filter((f) => f[name])).toHaveLength(1);
        await expectRebuildEqualOnSqlite(dir);
      } finally {
        await stop(...services);
      }
    },
    TIMEOUT_MS,
  );
});
