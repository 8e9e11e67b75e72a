/**
 * A read model whose schema gained a filter since its live generation was built: the instance that
 * holds its lease rebuilds it in the background, and serves from the generation it has meanwhile
 * (lists by the filters it was built with answer in full, the new filter answers 503). Here an
 * instance of the version before holds the lease at first, as in a rolling deploy, so the window
 * before the promotion does not depend on how fast the rebuild runs; once it lets the lease go, the
 * new version takes it, rebuilds, and the new filter works.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { seedEvents } from '../../bench/seed-events';
import { loadConfig } from '../../src/config/config';
import { customerProjection } from '../../src/customers/customer.projection';
import { rebuildProjections } from '../../src/projections/rebuild';
import { READ_MODELS, RECORD_KINDS } from '../../src/read-models';
import { openStores } from '../../src/stores/stores.module';
import { describeOnSqlite } from '../support/stores';
import { makeDataDir, startTestApp, TestApp, withToken } from '../support/test-app';

describeOnSqlite('a read model whose schema gained a filter', () => {
  let app: TestApp | undefined;
  afterAll(() => app?.close());

  it('answers lists from the generation built without it until it is rebuilt, then filters on it once promoted', async () => {
    const dataDir = makeDataDir();
    const { customerIds } = await seedEvents(join(dataDir, 'service.sqlite'), 20_000);
    // The read models as a version without the customers' mobile filter built them, up to the head.
    const { mobile: _, ...olderFilters } = customerProjection.schema.filters;
    const older = { ...customerProjection, schema: { ...customerProjection.schema, filters: olderFilters } };
    const stores = await openStores(loadConfig({ DATA_DIR: dataDir }), RECORD_KINDS);
    await rebuildProjections(
      READ_MODELS.map((p) => (p === customerProjection ? older : p)),
      stores.eventStore,
      stores.readStore,
      { signal: new AbortController().signal, graceMs: 0 },
    );
    // An instance of that version, alive (this process), holds the read model's lease.
    const olderInstance = `${hostname()}:${process.pid}`;
    expect(await stores.readStore.acquireLease(customerProjection.schema.name, olderInstance, 60_000)).toBe(olderInstance);

    // The seed's customer n = 3 is account-a's (token a), its mobile +44703.
    const someone = customerIds[1];
    app = await startTestApp({ dataDir, env: { LOG_LEVEL: 'info', PROJECTION_LEASE_MS: '1000' } });
    const answers: { list: Response; byMobile: Response }[] = [];
    for (;;) {
      const [list, byMobile] = await Promise.all([
        app.http.get(withToken('customers?limit=10&email=c3%40example.com')),
        app.http.get(withToken(`customers?mobile=${encodeURIComponent('+44703')}`)),
      ]);
      answers.push({ list, byMobile });
      if (byMobile.status === 200) break;
      expect({ status: byMobile.status, message: byMobile.body.error.message }).toEqual({
        status: 503,
        message: 'Lists cannot filter on mobile until the read model rebuilt with it is in place; try again shortly.',
      });
      // A few answers while the older instance holds the lease, then it stops and lets it go.
      if (answers.length === 3) await stores.readStore.releaseLease(customerProjection.schema.name, olderInstance);
      await new Promise((r) => setTimeout(r, 20));
    }
    await stores.readStore.close();
    await stores.eventStore.close();
    // Lists by the filters the old generation has answered all along, the same record each time.
    for (const { list } of answers)
      expect({ status: list.status, ids: list.body.data.map((c: { Customer: { id: string } }) => c.Customer.id) }).toEqual({ status: 200, ids: [someone] });
    // While the older instance held the lease, and until the rebuild was promoted, the new filter was not there.
    expect(answers.filter((a) => a.byMobile.status === 503).length).toBeGreaterThanOrEqual(3);
    const found = answers[answers.length - 1].byMobile;
    expect(found.body.data.map((c: { Customer: { id: string } }) => c.Customer.id)).toEqual([someone]);
    expect(app.output()).toContain('Read model customers was built with another schema: rebuilding it with the current one');
  }, 120_000);
});
