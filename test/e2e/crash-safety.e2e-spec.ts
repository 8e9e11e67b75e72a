import { rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { seedEvents } from '../../bench/seed-events';
import { comparePositions, START } from '../../src/event-store/event-store.port';
import { READ_MODELS } from '../../src/read-models';
import type { ReadDocument, ReadStore } from '../../src/read-store/read-store.port';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { openReadStore } from '../../src/stores/stores.module';
import { startChildService } from '../support/child-service';
import { runCli } from '../support/cli';
import { makeDataDir } from '../support/test-app';
import { describeOnSqlite } from '../support/stores';

const pause = () => new Promise((r) => setTimeout(r, 20));

/** The events of records' streams: each has a document in the feed's index (slug reservations have none). */
function recordEvents(file: string): number {
  const db = openSqliteDatabase(file, { durable: false });
  try {
    return (db.prepare("SELECT count(*) AS n FROM events WHERE stream_id LIKE 'customer-%' OR stream_id LIKE 'profile-%'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describeOnSqlite('crash safety', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a service killed with kill -9 mid-catch-up resumes to read models identical to a fresh rebuild', async () => {
    // Enough that the catch-up lasts seconds: the kill must land mid-way even when this test's
    // process runs late on a loaded machine (60,000 were once folded whole between two looks).
    const seeded = await seedEvents(join(dataDir, 'service.sqlite'), 120_000);
    // The feed's index has a document per event, by its position: the store's sequence numbers from 1.
    const positions = Array.from({ length: seeded.events }, (_, i) => String(i + 1));
    const ids: Record<string, string[]> = { profiles: seeded.profileIds, customers: seeded.customerIds, feed: positions };
    const reads: ReadStore = await openReadStore({ sqliteFile: join(dataDir, 'service.sqlite') });
    for (const p of READ_MODELS) await reads.ensureCollection(p.schema);
    const checkpoint = async () => (await reads.status('customers')).live.position ?? START;
    const building = async () => (await reads.status('customers')).building?.position ?? START;
    const dump = async () => {
      const models: Record<string, Map<string, ReadDocument>> = {};
      for (const p of READ_MODELS) models[p.name] = await reads.getMany(p.name, ids[p.name]);
      return models;
    };

    try {
      // Twice: killed while it catches up with the backlog (120,000 events: by a rebuild into a new
      // generation), once it has folded some of it. The live read models stay as they were.
      for (let kill = 0; kill < 2; kill++) {
        const service = await startChildService(dataDir);
        while (comparePositions(await building(), START) <= 0) await pause();
        service.crash();
        await service.exited;
        expect(await checkpoint()).toEqual(START);
        expect(Number((await building()).commit)).toBeLessThan(seeded.events); // it was mid-catch-up
      }

      const service = await startChildService(dataDir);
      for (;;) {
        const ready = await request(service.url).get('/health/ready');
        if (ready.status === 200 && ready.body.projections.every((p: { lag: number }) => p.lag === 0)) break;
        await pause();
      }
      service.process.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      const resumed = await dump();
      expect(resumed.profiles.size).toBe(seeded.profileIds.length);
      expect(resumed.customers.size).toBe(seeded.customerIds.length);
      expect(resumed.feed.size).toBe(recordEvents(join(dataDir, 'service.sqlite')));

      const resumedGeneration = (await reads.status('customers')).live.generation;
      const rebuild = await runCli(['projections', 'rebuild', 'all', '--grace-seconds', '0'], dataDir);
      expect(rebuild.code).toBe(0);
      expect((await reads.status('customers')).live.generation).toBe(resumedGeneration + 1);
      expect(await dump()).toEqual(resumed);
    } finally {
      await reads.close();
    }
    // 120,000 events folded twice over on a shared 2-core machine: generous.
  }, 180_000);
});
