import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import type { ReadDocument } from '../../src/read-store/read-store.port';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { openTempSqlite } from '../support/temp-sqlite';

// A rebuild's memory and log on SQLite: bounded whatever the store holds, and the log given back.
describe('SqliteReadStore rebuild bounds', () => {
  const schema = { name: 'people', filters: { email: 'exact-ci' as const, company: 'contains-ci' as const } };
  const doc = (n: number): ReadDocument => ({
    id: randomUUID(),
    accountId: 'acc',
    revision: 0,
    seq: n,
    deleted: false,
    created: 1_700_000_000,
    fields: { name: `Person ${n}`, email: `p${n}@example.com`, company: `Company ${n % 10}`, address: 'x'.repeat(200) },
  });
  const indexOf = (db: ReturnType<typeof openSqliteDatabase>, name: string) => db.prepare('SELECT name FROM sqlite_master WHERE name = ?').get(name);

  it('finds rows through its rowid table up to rowidsInMemory documents, then through the id index, and folds the same documents', async () => {
    const sqlite = openTempSqlite();
    const store = new SqliteReadStore(sqlite.db, 500);
    try {
      await store.ensureCollection(schema);
      const generation = await store.startRebuild('people');
      const docs = Array.from({ length: 1200 }, (_, i) => doc(i + 1));
      let commit = 0n;
      for (let from = 0; from < docs.length; from += 100) {
        const batch = docs.slice(from, from + 100);
        await store.commit('people', batch, { generation, position: { commit: ++commit, prepare: commit } });
        // Under the bound, no index on id yet; past it, the id index and no table.
        expect(Boolean(indexOf(sqlite.db, `people__g${generation}_by_id`))).toBe(from + 100 > 500);
        // Updates of documents written before, found whichever way.
        const updated = batch.slice(0, 10).map((d) => ({ ...d, revision: 1, fields: { ...d.fields, name: `${d.fields.name} v2` } }));
        const found = await store.getMany(
          'people',
          updated.map((d) => d.id),
          generation,
        );
        expect(found.size).toBe(10);
        await store.commit('people', updated, { generation, position: { commit: ++commit, prepare: commit } });
      }
      await store.promote('people', generation);
      const all = await store.getMany(
        'people',
        docs.map((d) => d.id),
      );
      expect(all.size).toBe(docs.length);
      expect([...all.values()].filter((d) => d.fields.name.endsWith(' v2'))).toHaveLength(120);
    } finally {
      await store.close().catch(() => undefined);
      sqlite.dispose();
    }
  });

  it('inserts a batch of new documents many rows a statement: a document given twice, a batch rolled back, rows found after', async () => {
    const sqlite = openTempSqlite();
    const store = new SqliteReadStore(sqlite.db);
    try {
      await store.ensureCollection(schema);
      const generation = await store.startRebuild('people');
      const docs = Array.from({ length: 150 }, (_, i) => doc(i + 1));
      const twice = { ...docs[70], revision: 1, fields: { ...docs[70].fields, name: 'Given twice' } };
      await store.commit('people', [...docs.slice(0, 100), twice, ...docs.slice(100)], { generation, position: { commit: 1n, prepare: 1n } });
      // Rolled back when a document cannot be written: none of the batch's rows stay, and the next batch's rows are right.
      const failing = Array.from({ length: 90 }, (_, i) => doc(1000 + i));
      failing[80] = { ...failing[80], fields: { name: 1n as unknown as string } };
      await expect(store.commit('people', failing, { generation, position: { commit: 2n, prepare: 2n } })).rejects.toThrow();
      const later = Array.from({ length: 70 }, (_, i) => doc(2000 + i));
      // With them, an update of a row written before the failure, and a later revision of a document
      // of the failed batch, which has no row: each lands on its own row, none on another's.
      const updated = { ...docs[5], revision: 1, fields: { ...docs[5].fields, name: 'Updated after' } };
      const retried = { ...failing[3], revision: 1 };
      await store.commit('people', [...later, updated, retried], { generation, position: { commit: 3n, prepare: 3n } });
      const ids = [...docs, ...failing, ...later].map((d) => d.id);
      const found = await store.getMany('people', ids, generation);
      expect(found.size).toBe(docs.length + later.length + 1);
      for (const d of [...docs, ...later]) expect(found.get(d.id)).toEqual(d === docs[70] ? twice : d === docs[5] ? updated : d);
      expect(found.get(retried.id)).toEqual(retried);
      await store.promote('people', generation);
      const count = sqlite.db.prepare(`SELECT count(*) FROM people__g${generation}`).pluck().get();
      expect(count).toBe(docs.length + later.length + 1);
      const listed = await store.find('people', { accountId: 'acc', filters: { company: 'company 3' }, order: 'oldest', limit: 100, offset: 0 });
      expect(listed.documents.map((d) => d.id)).toEqual([...docs, retried, ...later].filter((d) => d.fields.company === 'Company 3').map((d) => d.id));
    } finally {
      await store.close().catch(() => undefined);
      sqlite.dispose();
    }
  });

  it('leaves the write-ahead log empty after the promotion and after the drop of the replaced generation, while another connection has the file open', async () => {
    const sqlite = openTempSqlite();
    const store = new SqliteReadStore(openSqliteDatabase(sqlite.file, { durable: false }));
    try {
      await store.ensureCollection(schema);
      const generation = await store.startRebuild('people');
      let commit = 0n;
      for (let from = 0; from < 4000; from += 1000) {
        const docs = Array.from({ length: 1000 }, (_, i) => doc(from + i + 1));
        await store.commit('people', docs, { generation, position: { commit: ++commit, prepare: commit } });
      }
      // The indexes built at the promotion go through the log: hundreds of pages.
      await store.promote('people', generation);
      expect(statSync(`${sqlite.file}-wal`).size).toBe(0);
      // The old generation held nothing; a second rebuild replaces one that holds 4,000 rows.
      const next = await store.startRebuild('people');
      await store.commit('people', [doc(1)], { generation: next, position: { commit: ++commit, prepare: commit } });
      await store.promote('people', next);
      await store.dropRetired('people', 0);
      expect(statSync(`${sqlite.file}-wal`).size).toBe(0);
    } finally {
      await store.close();
      sqlite.dispose();
    }
  });
});
