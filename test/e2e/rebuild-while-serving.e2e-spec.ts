import { rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { seedEvents } from '../../bench/seed-events';
import { startChildService } from '../support/child-service';
import { runCli, spawnCli } from '../support/cli';
import { makeDataDir, withToken } from '../support/test-app';
import { describeOnSqlite } from '../support/stores';

describeOnSqlite('projections rebuild beside a running service', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps answering every read in full, and keeps the writes made during the rebuild', async () => {
    await seedEvents(join(dataDir, 'service.sqlite'), 40_000);
    // A write's wait for its read model shares two cores with the rebuild and the readers: on a loaded
    // machine 5 s (the default) can pass, and the point here is what a rebuild loses, not how fast.
    const service = await startChildService(dataDir, { READ_YOUR_WRITES_TIMEOUT_MS: '60000' });
    const http = request(service.url);
    for (;;) {
      const ready = await http.get('/health/ready');
      // Ready, and so are the workers the next requests reach: with WORKERS=2 one that follows the
      // other's fold sees the start's head reached at its next look at the checkpoint (100 ms).
      const caughtUp = ready.status === 200 && ready.body.projections.every((p: { lag: number }) => p.lag === 0);
      const lists = caughtUp ? await Promise.all([1, 2, 3, 4].map(() => http.get(withToken('customers?limit=1')))) : [];
      if (caughtUp && lists.every((list) => list.status === 200)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const total = async (resource: string) => Number((await http.get(withToken(`${resource}?limit=1`)).expect(200)).headers['x-total-count']);
    const seededProfiles = await total('profiles');
    const seededCustomers = await total('customers');
    const someone = (await http.get(withToken('customers?limit=1&order=oldest')).expect(200)).body.data[0].Customer;
    expect(seededCustomers).toBeGreaterThan(1000);

    // The service's own catch-up on these events was a rebuild already: the operators' one makes the next generation.
    const generations = async () =>
      JSON.parse((await runCli(['projections', 'status', '--json'], dataDir)).stdout).projections.map((p: { generation: number }) => p.generation);
    const before = await generations();
    const rebuild = spawnCli(['projections', 'rebuild', 'all', '--grace-seconds', '2'], dataDir);
    let rebuilding = true;
    const exited = rebuild.exited.finally(() => (rebuilding = false));
    const written: string[] = [];
    let readsDuringRebuild = 0;

    const reader = async () => {
      while (rebuilding) {
        const acknowledged = written.length; // every write acknowledged so far must be in the list
        const list = await http.get(withToken('customers?limit=5')).expect(200);
        expect(Number(list.headers['x-total-count'])).toBeGreaterThanOrEqual(seededCustomers + acknowledged);
        expect(list.body.data).toHaveLength(5);
        expect(Number((await http.get(withToken('profiles?limit=1')).expect(200)).headers['x-total-count'])).toBe(seededProfiles);
        expect((await http.get(withToken(`customers/${someone.id}`)).expect(200)).body.data[0].Customer).toEqual(someone);
        if (rebuilding) readsDuringRebuild += 1;
      }
    };
    const writer = async () => {
      while (rebuilding) {
        const created = await http
          .post(withToken('customers'))
          .send({ email: `during${written.length}@x.io` })
          .expect(201);
        const id = created.body.data.Customer.id;
        written.push(id);
        await http.get(withToken(`customers/${id}`)).expect(200);
      }
    };
    try {
      await Promise.all([reader(), reader(), writer()]);
      expect(await exited).toBe(0);
      expect(readsDuringRebuild).toBeGreaterThan(0);
      expect(written.length).toBeGreaterThan(0);

      // Served from the rebuilt storage now, with every write made during the rebuild.
      expect(await generations()).toEqual(before.map((g: number) => g + 1));
      expect(await total('customers')).toBe(seededCustomers + written.length);
      for (const id of written) await http.get(withToken(`customers/${id}`)).expect(200);
      // And after it, writes still reach the read models: the service followed the swap.
      const after = await http.post(withToken('customers')).send({ email: 'after@x.io' }).expect(201);
      await http.get(withToken(`customers/${after.body.data.Customer.id}`)).expect(200);
      expect(await total('customers')).toBe(seededCustomers + written.length + 1);
      expect(service.output()).toMatch(new RegExp(`Generation ${before[0]} was replaced by a rebuild: continuing in generation ${before[0] + 1}`));

      // A rebuild while the service is idle: its generation is replaced and dropped before it writes again.
      expect((await runCli(['projections', 'rebuild', 'customers', '--grace-seconds', '0'], dataDir)).code).toBe(0);
      const idle = await http.post(withToken('customers')).send({ email: 'idle@x.io' }).expect(201);
      await http.get(withToken(`customers/${idle.body.data.Customer.id}`)).expect(200);
      expect(await total('customers')).toBe(seededCustomers + written.length + 2);
    } catch (error) {
      // What the service logged says why a request failed; the assertion alone does not. Its 2xx lines say nothing.
      const notable = service
        .output()
        .split('\n')
        .filter((line) => !/"statusCode":2\d\d/.test(line));
      throw new Error(`${(error as Error).message}\n--- the service's log, but for its 2xx lines ---\n${notable.slice(-100).join('\n')}`, { cause: error });
    } finally {
      service.process.kill('SIGTERM');
      await service.exited;
    }
  }, 180_000); // the first start also seals the 40,000 seeded events (written as before encryption), on a shared machine
});
