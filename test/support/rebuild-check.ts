import { verifyStores } from '../../src/cli/verify';
import { READ_MODELS, RECORD_KINDS } from '../../src/read-models';
import { openEventStore, openReadStore } from '../../src/stores/stores.module';

/**
 * Folds every event from the start into a fresh read store with the real projectors, and compares
 * each read model with it record by record, as the CLI's verify does: none differs, and each has rows.
 */
export async function expectReadModelsEqualARebuild(serviceFile: string): Promise<void> {
  const config = { sqliteFile: serviceFile };
  const events = await openEventStore(config, RECORD_KINDS);
  const reads = await openReadStore(config);
  try {
    const report = await verifyStores(READ_MODELS, events, reads, { signal: new AbortController().signal });
    expect(report.differences).toEqual([]);
    expect(report.agree).toBe(true);
    for (const { name } of READ_MODELS) {
      expect(report.accounts.filter((a) => a.readModel === name).reduce((rows, a) => rows + a.stored.rows, 0)).toBeGreaterThan(0);
    }
  } finally {
    await events.close();
    await reads.close();
  }
}
