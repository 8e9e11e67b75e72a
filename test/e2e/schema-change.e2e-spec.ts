/**
 * A read model whose schema gained a filter since its live generation was built: the service
 * rebuilds it at start, in the background, and serves from the generation it has meanwhile (lists
 * by the filters it was built with answer in full, the new filter answers 503); once the rebuild is
 * promoted the new filter works.
 */
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

  it('answers lists from the generation built without it while it is rebuilt, then filters on it once promoted', async () => {
    const dataDir = makeDataDir();
    // Enough events that the rebuild at start takes longer than a request or two.
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
    await stores.readStore.close();
    await stores.eventStore.close();

    // The seed's customer n = 3 is account-a's (token a), its mobile +44703.
    const someone = customerIds[1];
    app = await startTestApp({ dataDir, env: { LOG_LEVEL: 'info' } });
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
      await new Promise((r) => setTimeout(r, 20));
    }
    // Lists by the filters the old generation has answered all along, the same record each time.
    for (const { list } of answers)
      expect({ status: list.status, ids: list.body.data.map((c: { Customer: { id: string } }) => c.Customer.id) }).toEqual({ status: 200, ids: [someone] });
    // The rebuild was under way while they answered: the new filter was not there yet.
    expect(answers.filter((a) => a.byMobile.status === 503).length).toBeGreaterThan(0);
    const found = answers[answers.length - 1].byMobile;
    expect(found.body.data.map((c: { Customer: { id: string } }) => c.Customer.id)).toEqual([someone]);
    expect(app.output()).toContain('Read model customers was built with another schema: rebuilding it with the current one');
  }, 120_000);
});
