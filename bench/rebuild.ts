import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rebuildProjections } from '../src/projections/rebuild';
import { READ_MODELS } from '../src/read-models';
import { openEventStore, openReadStore } from '../src/storage/storage.module';
import { seedEvents } from './seed-events';

/**
 * `npm run bench -- rebuild [events]`: seeds a fresh embedded store with 1,000,000 events (or the
 * number given), then rebuilds every read model from them in one pass, as `projections rebuild
 * all` does. Target: at least 50,000 events/s on the team's 2-core machines.
 */
export async function main(args: string[]): Promise<void> {
  const count = Number(args[0] ?? 1_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'bench-rebuild-'));
  const config = { sqliteFile: join(dir, 'service.sqlite') };
  try {
    let started = Date.now();
    const seeded = await seedEvents(config.sqliteFile, count);
    console.log(`seeded ${seeded.events} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const eventStore = await openEventStore(config);
    const readStore = await openReadStore(config);
    started = Date.now();
    const results = await rebuildProjections(READ_MODELS, eventStore, readStore, { signal: new AbortController().signal, graceMs: 0 });
    const seconds = (Date.now() - started) / 1000;
    const events = Math.max(...results.map((r) => r.events));
    console.log(
      `rebuilt ${results.map((r) => r.projection).join(' and ')} from ${events} events in ${seconds.toFixed(1)} s: ${Math.round(events / seconds)} events/s`,
    );
    await eventStore.close();
    await readStore.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
