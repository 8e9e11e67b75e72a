import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { START } from '../src/event-store/event-store.port';
import type { AppConfig } from '../src/config/config';
import { ProjectionsService } from '../src/projections/projections.service';
import { rebuildProjections } from '../src/projections/rebuild';
import { READ_MODELS, RECORD_KINDS } from '../src/read-models';
import { openEventStore, openStores } from '../src/stores/stores.module';
import { seedEvents } from './seed-events';

/** Stores that have served a while hold erasures: one record in a hundred here. */
const ERASED_ONE_IN = 100;

/**
 * `npm run bench -- rebuild [events]`: seeds a fresh embedded store with 1,000,000 events (or the
 * number given; one record in a hundred erased), seals them, then rebuilds every read model from
 * them in one pass, as `projections rebuild all` does; then, on a second store seeded alike, folds
 * them as the service's own projectors do on a first start (the catch-up). Target for both: at
 * least 50,000 events/s on the team's 2-core machines.
 */
export async function main(args: string[]): Promise<void> {
  const count = Number(args[0] ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'bench-rebuild-'));
  const config = { sqliteFile: join(dir, 'service.sqlite') };
  try {
    const started = Date.now();
    const seeded = await seedEvents(config.sqliteFile, count, { erasedOneIn: ERASED_ONE_IN });
    console.log(`seeded ${seeded.events} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const sealing = await seal(config.sqliteFile);
    console.log(
      `sealed them in place (a first start after the upgrade to encryption) in ${sealing.toFixed(1)} s: ${Math.round(seeded.events / sealing)} events/s`,
    );
    const { events, seconds } = await rebuildAll(config.sqliteFile);
    console.log(`rebuilt profiles and customers from ${events} events in ${seconds.toFixed(1)} s: ${Math.round(events / seconds)} events/s`);
    const fresh = join(dir, 'catch-up.sqlite');
    await seedEvents(fresh, count, { erasedOneIn: ERASED_ONE_IN });
    await seal(fresh);
    const caughtUp = await catchUp(fresh);
    console.log(
      `the service's catch-up folded ${caughtUp.events} events in ${caughtUp.seconds.toFixed(1)} s: ${Math.round(caughtUp.events / caughtUp.seconds)} events/s`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The seeds are written as the version before encryption wrote them, in plain (fast to make); the
 * first open seals them in place, as a first start after the upgrade does. Returns the seconds.
 */
async function seal(sqliteFile: string): Promise<number> {
  const started = Date.now();
  await (await openEventStore({ sqliteFile }, RECORD_KINDS)).close();
  return (Date.now() - started) / 1000;
}

/** Rebuilds every read model of the embedded store at `sqliteFile`, as `projections rebuild all` does. */
export async function rebuildAll(sqliteFile: string): Promise<{ events: number; seconds: number }> {
  const { eventStore, readStore } = await openStores({ sqliteFile }, RECORD_KINDS);
  try {
    const started = Date.now();
    const results = await rebuildProjections(READ_MODELS, eventStore, readStore, { signal: new AbortController().signal, graceMs: 0 });
    return { events: Math.max(...results.map((r) => r.events)), seconds: (Date.now() - started) / 1000 };
  } finally {
    await eventStore.close();
    await readStore.close();
  }
}

/** Starts the service's projections on the embedded store at `sqliteFile`, as a first start does, and times them until they have folded its head. */
export async function catchUp(sqliteFile: string): Promise<{ events: number; seconds: number }> {
  const { eventStore, readStore } = await openStores({ sqliteFile }, RECORD_KINDS);
  const service = new ProjectionsService(READ_MODELS, eventStore, readStore, {
    readYourWritesTimeoutMs: 3_600_000,
    projectionLeaseMs: 5_000,
    instanceId: 'bench',
  } as AppConfig);
  try {
    const started = Date.now();
    const head = await eventStore.headPosition();
    await service.onApplicationBootstrap();
    while (service.projectors.some((p) => p.state !== 'running')) await new Promise((r) => setTimeout(r, 10));
    await Promise.all(service.projectors.map((p) => p.waitFor(head, 3_600_000)));
    return { events: eventStore.eventsBetween(START, head) ?? 0, seconds: (Date.now() - started) / 1000 };
  } finally {
    await service.onModuleDestroy();
    await eventStore.close();
    await readStore.close();
  }
}
