import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { EVENT_STORE, EventStore } from '../../src/event-store/event-store.port';
import { ProjectionsService } from '../../src/projections/projections.service';
import { JSON_CT, startTestApp, TestApp, withToken } from '../support/test-app';
import { describeOnSqlite, describeUnlessWorkers } from '../support/stores';

const meta = { accountId: 'account-a', correlationId: 'c', causationId: 'c', schemaVersion: 1 };

describeOnSqlite('health', () =>
  describeUnlessWorkers(
    'of the one process',
    "it stops a projector and closes a store inside the app, and expects the one process to fold; with WORKERS, each worker's /health/ready is checked in several-instances.e2e-spec.ts",
    () => {
      let t: TestApp;
      afterEach(async () => {
        await t.close();
        jest.restoreAllMocks();
      });

      it('answers /health/live and /health/ready without a token, with each projection at lag 0', async () => {
        t = await startTestApp();
        await t.http.post(withToken('customers')).send({ email: 'ready@x.io' }).expect(201);
        const live = await t.http.get('/health/live').expect(200);
        expect(live.headers['content-type']).toBe(JSON_CT);
        expect(live.body).toEqual({ status: 'ok' });
        const ready = await t.http.get('/health/ready').expect(200);
        expect(ready.headers['content-type']).toBe(JSON_CT);
        // The create, and before it the note of the event versions written (written-versions.ts).
        expect(ready.body).toEqual({
          status: 'ready',
          head: '2',
          projections: [
            { name: 'profiles', state: 'running', folding: true, checkpoint: '2', lag: 0, failure: null },
            { name: 'customers', state: 'running', folding: true, checkpoint: '2', lag: 0, failure: null },
            { name: 'feed', state: 'running', folding: true, checkpoint: '2', lag: 0, failure: null },
          ],
          problems: [],
        });
      });

      it('answers 503 with the lag while a projection is further behind than READY_MAX_LAG_EVENTS', async () => {
        t = await startTestApp({ env: { READY_MAX_LAG_EVENTS: '2' } });
        const customers = t.app.get(ProjectionsService).projectors.find((p) => p.projection.name === 'customers')!;
        await customers.stop();
        const events = t.app.get<EventStore>(EVENT_STORE);
        for (let i = 0; i < 3; i++) {
          const created = { id: randomUUID(), type: 'ProfileCreated', data: { name: `P${i}` }, metadata: meta };
          await events.appendToStream(`profile-${randomUUID()}`, [created], 'no_stream');
        }
        const ready = await t.http.get('/health/ready').expect(503);
        expect(ready.headers['content-type']).toBe(JSON_CT);
        expect(ready.body.status).toBe('unavailable');
        // The three, and the note of ProfileCreated's version before the first (written-versions.ts).
        expect(ready.body.projections[1]).toMatchObject({ name: 'customers', state: 'stopped', checkpoint: '0', lag: 4 });
        expect(ready.body.problems).toEqual(['projection customers is stopped', 'projection customers is 4 events behind (bound 2)']);
      });

      it('answers 503 naming the poison event a projection stopped on, when told to stop on them (POISON_EVENTS=stop)', async () => {
        jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
        t = await startTestApp({ env: { POISON_EVENTS: 'stop' } });
        const streamId = `customer-${randomUUID()}`;
        const event = { id: randomUUID(), type: 'CustomerUpdated', data: { name: 'no creation first' }, metadata: meta };
        await t.app.get<EventStore>(EVENT_STORE).appendToStream(streamId, [event], 'no_stream');
        const customers = t.app.get(ProjectionsService).projectors.find((p) => p.projection.name === 'customers')!;
        while (customers.state !== 'failed') await new Promise((r) => setTimeout(r, 20));
        const ready = await t.http.get('/health/ready').expect(503);
        expect(ready.body.projections[1]).toMatchObject({
          name: 'customers',
          state: 'failed',
          failure: { streamId, revision: 0, error: `CustomerUpdated before CustomerCreated in ${streamId}` },
        });
        expect(ready.body.problems).toEqual([`projection customers stopped on ${streamId}@0`]);
      });

      it('answers 503 while a store is unreachable, without its internals', async () => {
        t = await startTestApp();
        await t.app.get<EventStore>(EVENT_STORE).close();
        const ready = await t.http.get('/health/ready').expect(503);
        expect(ready.body).toMatchObject({ status: 'unavailable', head: null });
        expect(ready.body.problems).toContain('event store unreachable');
        expect(JSON.stringify(ready.body)).not.toMatch(/database|sqlite|connection/i);
        // The metrics still answer, without the lag they cannot know: that is when an operator needs them.
        const metrics = await t.http.get('/metrics').expect(200);
        expect(metrics.text).toContain('projection_checkpoint{projection="customers"');
        expect(metrics.text).not.toContain('projection_lag{');
      });
    },
  ),
);
