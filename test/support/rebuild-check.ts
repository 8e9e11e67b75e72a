import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Projector } from '../../src/projections/projector';
import { READ_MODELS, RECORD_KINDS } from '../../src/read-models';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { Database, openSqliteDatabase, type SqliteDatabase } from '../../src/storage/sqlite-database';
import { openEventStore } from '../../src/stores/stores.module';
import { liveTable } from './live-table';
import { makeDataDir } from './test-app';

const PROJECTIONS = READ_MODELS;

/** Folds every event from the start into a fresh read store with the real projectors, and compares each collection. */
export async function expectReadModelsEqualARebuild(serviceFile: string): Promise<void> {
  const rebuildDir = makeDataDir();
  const rebuildFile = join(rebuildDir, 'rebuild.sqlite');
  const events = await openEventStore({ sqliteFile: serviceFile }, RECORD_KINDS);
  const rebuilt = new SqliteReadStore(openSqliteDatabase(rebuildFile, { durable: false }));
  try {
    const projectors = PROJECTIONS.map((p) => new Projector(p, events, rebuilt, { holder: 'rebuild-check', ttlMs: 60_000 }));
    await Promise.all(projectors.map((p) => p.start()));
    const head = await events.headPosition();
    await Promise.all(projectors.map((p) => p.waitFor(head, 120_000)));
    await Promise.all(projectors.map((p) => p.stop()));

    const service = new Database(serviceFile, { readonly: true });
    const fresh = new Database(rebuildFile, { readonly: true });
    try {
      for (const { schema } of PROJECTIONS) {
        const all = (db: SqliteDatabase) => db.prepare(`SELECT * FROM ${liveTable(db, schema.name)} ORDER BY id`).all();
        const served = all(service);
        expect(served.length).toBeGreaterThan(0);
        expect(served).toEqual(all(fresh));
      }
    } finally {
      service.close();
      fresh.close();
    }
  } finally {
    await events.close();
    await rebuilt.close();
    rmSync(rebuildDir, { recursive: true, force: true });
  }
}
