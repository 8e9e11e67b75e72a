import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type StoresModule = typeof import('../../src/stores/stores.module');
type ReadModels = typeof import('../../src/read-models');

describe('the stores on the embedded default', () => {
  it('open without loading the EventStoreDB or MongoDB drivers (a third of a start’s CPU, loaded only when configured)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcs-stores-'));
    const loaded: string[] = [];
    try {
      await jest.isolateModulesAsync(async () => {
        for (const driver of ['mongodb', '@eventstore/db-client']) {
          jest.doMock(driver, () => {
            loaded.push(driver);
            return {};
          });
        }
        const { openStores } = jest.requireActual<StoresModule>('../../src/stores/stores.module');
        const { RECORD_KINDS } = jest.requireActual<ReadModels>('../../src/read-models');
        const { eventStore, readStore } = await openStores({ sqliteFile: join(dir, 'service.sqlite') }, RECORD_KINDS, { log: () => undefined });
        await eventStore.close();
        await readStore.close();
      });
      expect(loaded).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
