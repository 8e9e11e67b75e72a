import { readFileSync } from 'node:fs';
import { SqliteKeyStore } from '../../src/key-store/sqlite-key-store';
import { openTempSqlite } from '../support/temp-sqlite';
import { keyStoreContract } from './key-store.contract';

keyStoreContract('SQLite (embedded default)', async () => {
  const sqlite = openTempSqlite();
  const store = new SqliteKeyStore(sqlite.db);
  return {
    store,
    async dispose() {
      await store.close();
      sqlite.dispose();
    },
  };
});

describe('SqliteKeyStore', () => {
  it('leaves no byte of a destroyed key in its file or its log', async () => {
    const sqlite = openTempSqlite();
    const store = new SqliteKeyStore(sqlite.db);
    try {
      const keys = await Promise.all(Array.from({ length: 50 }, (_, n) => store.obtain(`customer-${n}`)));
      const files = () => [sqlite.file, `${sqlite.file}-wal`].map((f) => readFileSync(f, { flag: 'r' }));
      expect(files().some((bytes) => bytes.includes(keys[7]!))).toBe(true);
      await store.destroy('customer-7', 'acc-1');
      for (const bytes of files()) expect(bytes.includes(keys[7]!)).toBe(false);
      expect(files()[0].includes(keys[8]!)).toBe(true);
    } finally {
      await store.close();
      sqlite.dispose();
    }
  });
});
