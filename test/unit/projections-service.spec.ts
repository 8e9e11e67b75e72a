import { UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { RECORD_KINDS } from '../../src/read-models';
import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../src/config/config';
import { customerProjection } from '../../src/customers/customer.projection';
import { ReadModelsBehindError } from '../../src/projections/read-models-behind.error';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { profileProjection } from '../../src/profiles/profile.projection';
import { ProjectionsService } from '../../src/projections/projections.service';
import { schemaFingerprint } from '../../src/read-store/generation-rules';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { openTempSqlite } from '../support/temp-sqlite';

const meta = { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 };
const ev = (type: string, data: Record<string, unknown> = {}): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

describe('ProjectionsService.waitFor', () => {
  it('waits only for the read models that follow the written stream', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const config = { readYourWritesTimeoutMs: 300, instanceId: 'unit', projectionLeaseMs: 60_000 } as AppConfig;
    const service = new ProjectionsService(
      [profileProjection, customerProjection],
      new UpcastingEventStore(events, RECORD_KINDS),
      new SqliteReadStore(sqlite.db),
      config,
    );
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await service.onApplicationBootstrap();
      const profiles = service.projectors.find((p) => p.projection === profileProjection)!;
      await profiles.stop(); // the profiles read model can no longer catch up with anything

      const customer = `customer-${randomUUID()}`;
      const written = await events.appendToStream(customer, [ev('CustomerCreated', { name: 'Ada', email: 'a@x.io' })], 'no_stream');
      await expect(service.waitFor(customer, written.position)).resolves.toBeUndefined();
      const slug = await events.appendToStream('profile_slug-acme', [ev('SlugReserved', { slug: 'acme' })], 'no_stream');
      await expect(service.waitFor('profile_slug-acme', slug.position)).resolves.toBeUndefined();

      const profile = `profile-${randomUUID()}`;
      const stuck = await events.appendToStream(profile, [ev('ProfileCreated', { name: 'Acme' })], 'no_stream');
      const refused = service.waitFor(profile, stuck.position);
      await expect(refused).rejects.toBeInstanceOf(ReadModelsBehindError);
      await expect(refused).rejects.toMatchObject({ retryAfter: 1 });
    } finally {
      await service.onModuleDestroy();
      warned.mockRestore();
      await events.close();
      sqlite.dispose();
    }
  });
});

describe('ProjectionsService on a first start far behind the events', () => {
  it('catches the read models up by a rebuild into a new generation, in one instance only, then follows the head', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const readStore = new SqliteReadStore(sqlite.db);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const config = (instanceId: string) => ({ readYourWritesTimeoutMs: 60_000, instanceId, projectionLeaseMs: 60_000 }) as AppConfig;
    const service = new ProjectionsService([profileProjection, customerProjection], new UpcastingEventStore(events, RECORD_KINDS), readStore, config('one'));
    // A second instance on the same stores, started at the same time: it must leave the catch-up to the first.
    const other = new ProjectionsService([profileProjection, customerProjection], new UpcastingEventStore(events, RECORD_KINDS), readStore, config('two'));
    try {
      // More than the 10,000 events past which a start rebuilds rather than folds one batch at a time.
      const ids = Array.from({ length: 10_050 }, () => randomUUID());
      await Promise.all(ids.map((id, i) => events.appendToStream(`customer-${id}`, [ev('CustomerCreated', { name: `C${i}`, email: 'c@x.io' })], 'no_stream')));
      await service.onApplicationBootstrap();
      await other.onApplicationBootstrap();
      // Neither instance answers reads from read models short of the events stored before the start.
      for (const instance of [service, other]) {
        expect(instance.projectors.map((p) => p.caughtUp)).toEqual([false, false]);
        expect(() => instance.assertCaughtUp(customerProjection.schema.name)).toThrow(
          expect.objectContaining({ name: 'ReadModelsBehindError', retryAfter: 5 }),
        );
        // An answer after a write says the write is saved: "try again" would make it twice.
        expect(() => instance.assertCaughtUp(profileProjection.schema.name, { afterWrite: true })).toThrow(
          expect.objectContaining({ name: 'ReadModelsBehindError', message: expect.stringMatching(/^The change was saved, .* read it again shortly\.$/) }),
        );
      }
      const catchUps = logged.mock.calls.filter(([message]) => String(message).includes('catching up'));
      expect(catchUps).toEqual([['Read models far behind the events: catching up profiles, customers by a rebuild']]);
      const head = await events.headPosition();
      while (service.projectors.some((p) => p.state !== 'running')) await new Promise((r) => setTimeout(r, 20));
      await Promise.all(service.projectors.map((p) => p.waitFor(head, 60_000)));
      expect(service.projectors.map((p) => p.caughtUp)).toEqual([true, true]);
      expect(() => service.assertCaughtUp(customerProjection.schema.name)).not.toThrow();
      // The instance that follows sees the checkpoint get there at its next look, unasked.
      const since = Date.now();
      while (!other.projectors.every((p) => p.caughtUp)) await new Promise((r) => setTimeout(r, 20));
      expect(Date.now() - since).toBeLessThan(2000);
      const { live } = await readStore.status(customerProjection.schema.name);
      expect(live.generation).toBe(2); // one rebuild, not one per instance
      expect((await readStore.get(customerProjection.schema.name, 'acc', ids[10_049]))?.revision).toBe(0);
      // Following the head from there: a new write is folded and waited for as usual.
      const later = `customer-${randomUUID()}`;
      const written = await events.appendToStream(later, [ev('CustomerCreated', { name: 'Later', email: 'l@x.io' })], 'no_stream');
      await expect(service.waitFor(later, written.position)).resolves.toBeUndefined();
      await expect(other.waitFor(later, written.position)).resolves.toBeUndefined();
      expect(other.projectors.map((p) => p.folding)).toEqual([false, false]);
    } finally {
      await other.onModuleDestroy();
      await service.onModuleDestroy();
      logged.mockRestore();
      await events.close();
      sqlite.dispose();
    }
  }, 120_000);
});

/** Resolves once `check` holds, looking every 20 ms; fails after 20 s. */
async function until(check: () => boolean): Promise<void> {
  for (const end = Date.now() + 20_000; !check(); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > end) throw new Error('the condition did not come about within 20 s');
  }
}

describe('ProjectionsService at a start over read models built with another schema', () => {
  const config = { readYourWritesTimeoutMs: 60_000, instanceId: 'unit', projectionLeaseMs: 60_000 } as AppConfig;

  it('rebuilds only a read model whose live generation was built with another schema, saying which; none made before fingerprints', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const readStore = new SqliteReadStore(sqlite.db);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const { mobile: _, ...olderFilters } = customerProjection.schema.filters;
    try {
      // As a version without the customers' mobile filter left them, and the profiles as one before fingerprints.
      await readStore.ensureCollection({ ...customerProjection.schema, filters: olderFilters });
      await readStore.ensureCollection(profileProjection.schema);
      sqlite.db.prepare("UPDATE read_model_generations SET fingerprint = NULL, filters = NULL WHERE collection = 'profiles'").run();
      const rebuilt = jest.spyOn(readStore, 'startRebuild');
      const service = new ProjectionsService([profileProjection, customerProjection], new UpcastingEventStore(events, RECORD_KINDS), readStore, config);
      await service.onApplicationBootstrap();
      // Looked at as its projector starts folding (the lease taken), not a lease period later.
      await until(() => logged.mock.calls.some(([message]) => String(message).startsWith('Rebuilt customers with the current schema')));
      await service.onModuleDestroy();
      expect(rebuilt.mock.calls).toEqual([['customers']]);
      const messages = logged.mock.calls.map(([message]) => String(message));
      expect(messages).toContain('Read model customers was built with another schema: rebuilding it with the current one');
      expect(messages.filter((m) => m.includes('another schema'))).toHaveLength(1);
      expect(await readStore.fingerprint('profiles', 1)).toBe(schemaFingerprint(profileProjection.schema));
    } finally {
      logged.mockRestore();
      await events.close();
      sqlite.dispose();
    }
  });

  it('tries a schema rebuild that failed again, while the instance folds the read model', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const readStore = new SqliteReadStore(sqlite.db);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const failed = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const { mobile: _, ...olderFilters } = customerProjection.schema.filters;
    try {
      await readStore.ensureCollection({ ...customerProjection.schema, filters: olderFilters });
      const startRebuild = readStore.startRebuild.bind(readStore);
      const rebuilt = jest.spyOn(readStore, 'startRebuild').mockRejectedValueOnce(new Error('store down')).mockImplementation(startRebuild);
      const service = new ProjectionsService([customerProjection], events, readStore, { ...config, projectionLeaseMs: 1000 });
      await service.onApplicationBootstrap();
      await until(() => logged.mock.calls.some(([message]) => String(message).startsWith('Rebuilt customers with the current schema')));
      await service.onModuleDestroy();
      expect(rebuilt).toHaveBeenCalledTimes(2);
      expect(failed.mock.calls.map(([message]) => String(message))).toEqual([
        'Rebuilding customers with the current schema failed, to be tried again: store down',
      ]);
      expect(await readStore.fingerprint('customers', (await readStore.status('customers')).live.generation)).toBe(
        schemaFingerprint(customerProjection.schema),
      );
    } finally {
      logged.mockRestore();
      failed.mockRestore();
      await events.close();
      sqlite.dispose();
    }
  });
  it('parks in that rebuild the streams of events it cannot fold, as its projectors do, and promotes it', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const readStore = new SqliteReadStore(sqlite.db);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { mobile: _, ...olderFilters } = customerProjection.schema.filters;
    const service = new ProjectionsService([profileProjection, customerProjection], new UpcastingEventStore(events, RECORD_KINDS), readStore, {
      ...config,
      poisonEvents: 'park',
    });
    try {
      await readStore.ensureCollection({ ...customerProjection.schema, filters: olderFilters });
      const stream = `customer-${randomUUID()}`;
      await events.appendToStream(stream, [ev('CustomerUpdated', { name: 'no creation first' })], 'no_stream');
      const fine = `customer-${randomUUID()}`;
      await events.appendToStream(fine, [ev('CustomerCreated', { name: 'Ada', email: 'a@x.io' })], 'no_stream');
      await service.onApplicationBootstrap();
      let live = (await readStore.status('customers')).live.generation;
      for (let tries = 0; tries < 500 && live === 1; tries++) {
        await new Promise((r) => setTimeout(r, 20));
        live = (await readStore.status('customers')).live.generation;
      }
      expect(live).toBe(2);
      expect(await readStore.parked('customers', 2)).toEqual([expect.objectContaining({ streamId: stream, first: expect.objectContaining({ revision: 0 }) })]);
      expect(await readStore.get('customers', 'acc', fine.slice('customer-'.length))).toMatchObject({ fields: { name: 'Ada' } });
      expect(warned.mock.calls.map(([m]) => String(m))).toContain(
        `Parked ${stream}@0 in the rebuild of customers, and the events after it in its stream: CustomerUpdated before CustomerCreated in ${stream}`,
      );
    } finally {
      await service.onModuleDestroy();
      logged.mockRestore();
      warned.mockRestore();
      await events.close();
      sqlite.dispose();
    }
  });
});
