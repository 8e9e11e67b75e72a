import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../../src/config/config';
import { customerProjection } from '../../src/customers/customer.projection';
import { ApiError } from '../../src/errors';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { profileProjection } from '../../src/profiles/profile.projection';
import { ProjectionsService } from '../../src/projections/projections.service';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { openTempSqlite } from '../support/temp-sqlite';

const meta = { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 };
const ev = (type: string, data: Record<string, unknown> = {}): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

describe('ProjectionsService.waitFor', () => {
  it('waits only for the read models that follow the written stream', async () => {
    const sqlite = openTempSqlite();
    const events = new SqliteEventStore(sqlite.db, 20);
    const config = { readYourWritesTimeoutMs: 300, instanceId: 'unit', projectionLeaseMs: 60_000 } as AppConfig;
    const service = new ProjectionsService([profileProjection, customerProjection], events, new SqliteReadStore(sqlite.db), config);
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
      await expect(refused).rejects.toBeInstanceOf(ApiError);
      await expect(refused).rejects.toMatchObject({ code: 'UNAVAILABLE', retryAfter: 1 });
    } finally {
      await service.onModuleDestroy();
      warned.mockRestore();
      sqlite.dispose();
    }
  });
});
