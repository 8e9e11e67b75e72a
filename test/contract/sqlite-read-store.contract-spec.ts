import { randomUUID } from 'node:crypto';
import { GenerationReplacedError, ReadDocument } from '../../src/read-store/read-store.port';
import { schemaFingerprint } from '../../src/read-store/generation-rules';
import { openSqliteDatabase } from '../../src/storage/sqlite-database';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { substringQuery, substringTokens } from '../../src/read-store/substrings';
import { openTempSqlite } from '../support/temp-sqlite';
import { readStoreContract } from './read-store.contract';

readStoreContract('SQLite (embedded default)', async () => {
  const sqlite = openTempSqlite();
  const store = new SqliteReadStore(sqlite.db);
  return {
    store,
    async dispose() {
      await store.close();
      sqlite.dispose();
    },
  };
});

describe('SqliteReadStore rebuilds', () => {
  const schema = { name: 'people', filters: { email: 'exact-ci' as const } };
  const at = (commit: bigint, generation: number) => ({ generation, position: { commit, prepare: commit } });
  const doc = (over: Partial<ReadDocument> = {}): ReadDocument => ({
    id: randomUUID(),
    accountId: 'acc',
    revision: 0,
    seq: 1,
    deleted: false,
    created: 1_700_000_000,
    fields: {},
    ...over,
  });
  let sqlite: ReturnType<typeof openTempSqlite>;

  beforeEach(() => (sqlite = openTempSqlite()));
  afterEach(() => sqlite.dispose());

  it('builds the id index once past the documents it keeps in memory, losing nothing and keeping newer revisions', async () => {
    const store = new SqliteReadStore(sqlite.db, 2);
    await store.ensureCollection(schema);
    const generation = await store.startRebuild(schema.name);
    const [a, b, c] = [doc({ seq: 1 }), doc({ seq: 2 }), doc({ seq: 3 })];
    await store.commit(schema.name, [a, b], at(1n, generation));
    const a1 = { ...a, revision: 1, fields: { email: 'a@x.io' } };
    await store.commit(schema.name, [a1, c], at(2n, generation)); // the third document: past the limit
    const b1 = { ...b, revision: 1, fields: { email: 'b@x.io' } };
    await store.commit(schema.name, [b1, { ...a, revision: 0, fields: { email: 'stale@x.io' } }], at(3n, generation));
    expect(await store.getMany(schema.name, [a.id, b.id, c.id], generation)).toEqual(
      new Map([
        [a.id, a1],
        [b.id, b1],
        [c.id, c],
      ]),
    );

    await store.promote(schema.name, generation);
    const found = await store.find(schema.name, { accountId: 'acc', filters: { email: 'B@X.IO' }, limit: 10, offset: 0, order: 'oldest' });
    expect(found).toEqual({ documents: [b1], total: 1, capped: false });
    const b2 = { ...b1, revision: 2, fields: { email: 'b2@x.io' } };
    await store.commit(schema.name, [b2], at(4n, generation));
    expect(await store.get(schema.name, 'acc', b.id)).toEqual(b2);
  });

  it('checkpoints its WAL less often while it rebuilds, and as usual again once the last build is promoted', async () => {
    // In the service the connection is the event store's too: its commits must not keep a rebuild's setting.
    const store = new SqliteReadStore(sqlite.db);
    await store.ensureCollection(schema);
    await store.ensureCollection({ ...schema, name: 'others' });
    const autocheckpoint = () => sqlite.db.pragma('wal_autocheckpoint', { simple: true });
    const usual = autocheckpoint();
    const people = await store.startRebuild(schema.name);
    const others = await store.startRebuild('others');
    expect(autocheckpoint()).toBeGreaterThan(usual as number);
    await store.promote(schema.name, people);
    expect(autocheckpoint()).toBeGreaterThan(usual as number); // the other build goes on
    await store.promote('others', others);
    expect(autocheckpoint()).toBe(usual);

    /** What another process does on the same file, through a connection and a store of its own. */
    const elsewhere = async (act: (other: SqliteReadStore) => Promise<unknown>) => {
      const connection = openSqliteDatabase(sqlite.file, { durable: false });
      try {
        const other = new SqliteReadStore(connection);
        await other.ensureCollection(schema);
        await act(other);
      } finally {
        connection.close();
      }
    };

    // A build another process replaced is over too: its next write is refused, and the setting goes back.
    const replaced = await store.startRebuild(schema.name);
    await elsewhere((other) => other.startRebuild(schema.name));
    expect(autocheckpoint()).toBeGreaterThan(usual as number);
    await expect(store.commit(schema.name, [doc()], at(1n, replaced))).rejects.toThrow(GenerationReplacedError);
    expect(autocheckpoint()).toBe(usual);

    // A build given up (a rebuild stopped or failed) is over too, even one another process had dropped already.
    const abandoned = await store.startRebuild(schema.name);
    expect(autocheckpoint()).toBeGreaterThan(usual as number);
    await store.abandonRebuild(schema.name, abandoned);
    expect(autocheckpoint()).toBe(usual);
    const droppedElsewhere = await store.startRebuild(schema.name);
    await elsewhere(async (other) => other.abandonRebuild(schema.name, await other.startRebuild(schema.name)));
    expect(autocheckpoint()).toBeGreaterThan(usual as number);
    await store.abandonRebuild(schema.name, droppedElsewhere);
    expect(autocheckpoint()).toBe(usual);
  });

  it('keeps the same documents whether a rebuild found them in memory or through the index', async () => {
    const results: Map<string, ReadDocument>[] = [];
    const docs = Array.from({ length: 6 }, (_, n) => doc({ seq: n + 1 }));
    for (const limit of [2, 1_000]) {
      const store = new SqliteReadStore(sqlite.db, limit);
      await store.ensureCollection(schema);
      const generation = await store.startRebuild(schema.name);
      for (const [n, d] of docs.entries()) {
        await store.commit(schema.name, [d, { ...docs[0], revision: n, fields: { email: `v${n}@x.io` } }], at(BigInt(n + 1), generation));
      }
      await store.commit(schema.name, [{ ...docs[0], revision: 1, fields: { email: 'stale@x.io' } }], at(7n, generation));
      results.push(
        await store.getMany(
          schema.name,
          docs.map((d) => d.id),
          generation,
        ),
      );
    }
    expect(results[0]).toEqual(results[1]);
    expect(results[0].get(docs[0].id)).toMatchObject({ revision: 5, fields: { email: 'v5@x.io' } });
  });

  it('refuses to write a generation another process is building', async () => {
    const builder = new SqliteReadStore(sqlite.db);
    const other = new SqliteReadStore(sqlite.db);
    await builder.ensureCollection(schema);
    await other.ensureCollection(schema);
    const generation = await builder.startRebuild(schema.name);
    await expect(other.commit(schema.name, [doc()], at(1n, generation))).rejects.toThrow(
      `Generation ${generation} of people is being built by another process`,
    );
    await builder.commit(schema.name, [doc()], at(1n, generation));
  });

  it('reads from the generation another store promoted, and after it dropped the one read before', async () => {
    const reader = new SqliteReadStore(sqlite.db);
    const builder = new SqliteReadStore(sqlite.db);
    await reader.ensureCollection(schema);
    await builder.ensureCollection(schema);
    const before = doc({ fields: { email: 'old@x.io' } });
    await reader.commit(schema.name, [before], at(1n, 1));
    const query = { accountId: 'acc', filters: {}, limit: 10, offset: 0, order: 'oldest' as const };
    expect(await reader.get(schema.name, 'acc', before.id)).toEqual(before); // generation 1, remembered as live
    expect(await reader.find(schema.name, query)).toEqual({ documents: [before], total: 1, capped: false });

    const rebuilt = { ...before, revision: 1, fields: { email: 'new@x.io' } };
    const generation = await builder.startRebuild(schema.name);
    await builder.commit(schema.name, [rebuilt], at(2n, generation));
    await builder.promote(schema.name, generation);
    expect(await reader.oldest(schema.name, 'acc')).toEqual(rebuilt); // the first read since the promotion
    expect(await reader.get(schema.name, 'acc', before.id)).toEqual(rebuilt);
    expect(await reader.find(schema.name, query)).toEqual({ documents: [rebuilt], total: 1, capped: false });

    // A reader that last read generation 1 before it was dropped finds the live one.
    const late = new SqliteReadStore(sqlite.db);
    await late.ensureCollection(schema);
    const third = await builder.startRebuild(schema.name);
    await builder.commit(schema.name, [rebuilt], at(3n, third));
    await builder.promote(schema.name, third);
    expect(await reader.find(schema.name, query)).toEqual({ documents: [rebuilt], total: 1, capped: false }); // reads generation 3
    const fourth = await builder.startRebuild(schema.name);
    await builder.commit(schema.name, [rebuilt], at(4n, fourth));
    await builder.promote(schema.name, fourth);
    await builder.dropRetired(schema.name, -1_000); // drops generation 3, the one `reader` read last
    expect(await reader.oldest(schema.name, 'acc')).toEqual(rebuilt);
    expect(await reader.get(schema.name, 'acc', before.id)).toEqual(rebuilt);
    expect(await reader.find(schema.name, query)).toEqual({ documents: [rebuilt], total: 1, capped: false });
    expect(await late.get(schema.name, 'acc', randomUUID())).toBeNull();
  });
});

describe('SqliteReadStore over a file an earlier version made, before generations kept their schema', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  beforeEach(() => {
    sqlite = openTempSqlite();
    // The tables as that version made them: no fingerprint, no filters in the generations' table.
    sqlite.db.exec(`
      CREATE TABLE read_model_generations (
        collection TEXT NOT NULL, generation INTEGER NOT NULL, state TEXT NOT NULL, commit_pos TEXT, prepare_pos TEXT,
        failure TEXT, updated_at INTEGER NOT NULL, PRIMARY KEY (collection, generation)
      );
      INSERT INTO read_model_generations VALUES ('people', 1, 'live', '7', '7', NULL, 0);
      CREATE TABLE people__g1 (
        id TEXT NOT NULL, account_id TEXT NOT NULL, revision INTEGER NOT NULL, seq INTEGER NOT NULL,
        deleted INTEGER NOT NULL, created INTEGER NOT NULL, fields TEXT NOT NULL, f_email TEXT NOT NULL
      );
      CREATE UNIQUE INDEX people__g1_by_id ON people__g1 (id);
      INSERT INTO people__g1 VALUES ('p1', 'acc', 0, 1, 0, 1700000000, '{"email":"Ann@x.io"}', 'ann@x.io');
    `);
  });
  afterEach(() => sqlite.dispose());

  it('takes its live generation as built with the current schema, stamps it so, and reads and writes it as before', async () => {
    const schema = { name: 'people', filters: { email: 'exact-ci' as const } };
    const store = new SqliteReadStore(sqlite.db);
    await store.ensureCollection(schema);
    expect(await store.fingerprint('people', 1)).toBe(schemaFingerprint(schema));
    const found = await store.find('people', { accountId: 'acc', filters: { email: 'ANN@x.io' }, order: 'newest', offset: 0, limit: 10 });
    expect(found.documents.map((d) => d.id)).toEqual(['p1']);
    const bob = { id: 'p2', accountId: 'acc', revision: 0, seq: 2, deleted: false, created: 1_700_000_000, fields: { email: 'Bob@x.io' } };
    await store.commit('people', [bob], { generation: 1, position: { commit: 8n, prepare: 8n } });
    await expect(store.get('people', 'acc', 'p2')).resolves.toEqual(bob);
    expect((await store.status('people')).live).toMatchObject({ generation: 1, position: { commit: 8n, prepare: 8n } });
  });
});

describe('SqliteReadStore lists: work bounded by the page, not by the account (20,000 records)', () => {
  const schema = { name: 'buyers', filters: { email: 'exact-ci' as const, company: 'contains-ci' as const } };
  const RECORDS = 20_000;
  let sqlite: ReturnType<typeof openTempSqlite>;
  let store: SqliteReadStore;
  /** Rows the store checked a substring on: SQLite's instr, counted (same answers). */
  let checked = 0;
  const companyOf = (i: number) => (i % 10 === 0 ? `Acme Trading ${i}` : `Globex ${i}`);

  beforeAll(async () => {
    sqlite = openTempSqlite();
    sqlite.db.function('instr', { deterministic: true }, (text: unknown, part: unknown) => {
      checked++;
      return typeof text === 'string' && typeof part === 'string' ? text.indexOf(part) + 1 : 0;
    });
    store = new SqliteReadStore(sqlite.db);
    await store.ensureCollection(schema);
    const docs = Array.from({ length: RECORDS }, (_, i) => ({
      id: randomUUID(),
      accountId: 'big',
      revision: 0,
      seq: i + 1,
      deleted: false,
      created: 1_700_000_000,
      fields: { email: `b${i}@x.io`, company: companyOf(i) },
    }));
    for (let i = 0; i < RECORDS; i += 5000)
      await store.commit(schema.name, docs.slice(i, i + 5000), { generation: 1, position: { commit: BigInt(i + 1), prepare: BigInt(i + 1) } });
  });
  afterAll(async () => {
    await store.close();
    sqlite.dispose();
  });

  const find = async (filters: Record<string, string>, over: object = {}) => {
    checked = 0;
    const found = await store.find(schema.name, { accountId: 'big', filters, order: 'newest', offset: 0, limit: 10, ...over });
    return { companies: found.documents.map((d) => d.fields.company), total: found.total, capped: found.capped, checked };
  };

  it('finds a substring no record holds without checking any', async () => {
    expect(await find({ company: 'zzz' })).toEqual({ companies: [], total: 0, capped: false, checked: 0 });
    expect(await find({ company: 'q' })).toEqual({ companies: [], total: 0, capped: false, checked: 0 });
  });

  it('checks only the records holding every piece of a rare substring', async () => {
    // Checked twice: once for the page, once for the count.
    expect(await find({ company: 'trading 1234' })).toEqual({ companies: ['Acme Trading 12340'], total: 1, capped: false, checked: 2 });
  });

  it('counts a common substring up to COUNT_LIMIT (capped past it), checking no more than that', async () => {
    const common = await find({ company: 'globex' });
    expect(common).toMatchObject({ total: 10_000, capped: true });
    expect(common.companies).toEqual([
      'Globex 19999',
      'Globex 19998',
      'Globex 19997',
      'Globex 19996',
      'Globex 19995',
      'Globex 19994',
      'Globex 19993',
      'Globex 19992',
      'Globex 19991',
      'Globex 19989',
    ]);
    expect(common.checked).toBeLessThanOrEqual(10_001 + 10);
    const some = await find({ company: 'acme' });
    expect(some).toMatchObject({ total: 2_000, capped: false });
    expect(some.checked).toBeGreaterThanOrEqual(2_000); // each match is checked: the count counts
    expect(some.checked).toBeLessThanOrEqual(2_000 + 10);
  });

  it('pages a substring past a cursor by the index, in either order', async () => {
    expect((await find({ company: 'acme' }, { after: 19_991 })).companies.slice(0, 2)).toEqual(['Acme Trading 19980', 'Acme Trading 19970']);
    expect((await find({ company: 'acme' }, { order: 'oldest', after: 1, limit: 2 })).companies).toEqual(['Acme Trading 10', 'Acme Trading 20']);
    expect((await find({ company: 'acme' }, { after: 11 })).companies).toEqual(['Acme Trading 0']);
  });

  it('finds one and two characters, and follows a changed, a deleted and an erased record', async () => {
    const [first] = (await store.find(schema.name, { accountId: 'big', filters: {}, order: 'oldest', offset: 0, limit: 1 })).documents;
    await store.commit(schema.name, [{ ...first, revision: 1, fields: { ...first.fields, company: 'Ωmega' } }], {
      generation: 1,
      position: { commit: 30_000n, prepare: 30_000n },
    });
    expect((await find({ company: 'ω' })).companies).toEqual(['Ωmega']);
    expect((await find({ company: 'ΩM' })).companies).toEqual(['Ωmega']);
    expect((await find({ company: 'acme trading 0' })).companies).toEqual([]); // its old value
    await store.erase(schema.name, [first.id]);
    expect(await find({ company: 'ω' })).toMatchObject({ companies: [], total: 0 });
  });

  it('counts an account past COUNT_LIMIT as capped, and an exact filter by its index', async () => {
    expect(await find({})).toMatchObject({ total: 10_000, capped: true, checked: 0 });
    expect(await find({ email: 'B123@X.IO' })).toEqual({ companies: ['Globex 123'], total: 1, capped: false, checked: 0 });
  });

  it('gives a rebuilt generation its substring index at the promotion', async () => {
    const generation = await store.startRebuild(schema.name);
    const doc = { id: randomUUID(), accountId: 'big', revision: 0, seq: 1, deleted: false, created: 1_700_000_000, fields: { company: 'Rebuilt Works' } };
    await store.commit(schema.name, [doc], { generation, position: { commit: 40_000n, prepare: 40_000n } });
    await store.promote(schema.name, generation);
    // Checked twice: once for the page, once for the count.
    expect(await find({ company: 'works' })).toEqual({ companies: ['Rebuilt Works'], total: 1, capped: false, checked: 2 });
    const later = { ...doc, id: randomUUID(), seq: 2, fields: { company: 'Later Works' } };
    await store.commit(schema.name, [later], { generation, position: { commit: 40_001n, prepare: 40_001n } });
    expect((await find({ company: 'works' })).companies).toEqual(['Later Works', 'Rebuilt Works']);
  });
});

describe('SqliteReadStore substring index: kept up to date through the rows waiting for it', () => {
  const schema = { name: 'buyers', filters: { email: 'exact-ci' as const, company: 'contains-ci' as const } };
  const t = 'buyers__g1';
  let sqlite: ReturnType<typeof openTempSqlite>;
  let store: SqliteReadStore;
  let seq = 0;
  const doc = (company: string): ReadDocument => ({
    id: randomUUID(),
    accountId: 'acc',
    revision: 0,
    seq: ++seq,
    deleted: false,
    created: 1_700_000_000,
    fields: { company, email: `e${seq}@x.io` },
  });
  const commit = (docs: ReadDocument[]) => store.commit(schema.name, docs, { generation: 1, position: { commit: BigInt(seq), prepare: BigInt(seq) } });
  const find = async (company: string) =>
    (await store.find(schema.name, { accountId: 'acc', filters: { company }, order: 'newest', offset: 0, limit: 10 })).documents.map((d) => d.fields.company);
  const waiting = () => sqlite.db.prepare(`SELECT count(*) FROM substrings_pending_${t}`).pluck().get() as number;
  /** The records the index itself names for a substring, unchecked. */
  const indexed = (company: string) =>
    sqlite.db
      .prepare(`SELECT rowid FROM substrings_${t} WHERE substrings_${t} MATCH ?`)
      .pluck()
      .all(substringQuery('acc', 0, company.toLowerCase()));

  beforeEach(async () => {
    sqlite = openTempSqlite();
    store = new SqliteReadStore(sqlite.db);
    await store.ensureCollection(schema);
  });
  afterEach(async () => {
    await store.close();
    sqlite.dispose();
  });

  it('leaves a small commit’s tokens waiting, and a find takes them in before it reads, as does the flush a moment later', async () => {
    const a = doc('Initech');
    await commit([a]);
    expect({ waiting: waiting(), indexed: indexed('initech') }).toEqual({ waiting: 1, indexed: [] });
    expect(await find('nitec')).toEqual(['Initech']);
    expect({ waiting: waiting(), indexed: indexed('initech') }).toEqual({ waiting: 0, indexed: [a.seq] });

    const b = doc('Hooli');
    await commit([b]);
    expect(waiting()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect({ waiting: waiting(), indexed: indexed('hooli') }).toEqual({ waiting: 0, indexed: [b.seq] });
    // A change of its value takes the old tokens out; a change of another field waits for nothing.
    await commit([{ ...b, revision: 1, fields: { ...b.fields, company: 'Pied Piper' } }]);
    expect(await find('hooli')).toEqual([]);
    expect({ old: indexed('hooli'), now: indexed('pied') }).toEqual({ old: [], now: [b.seq] });
    await commit([{ ...b, revision: 2, fields: { company: 'Pied Piper', email: 'new@x.io' } }]);
    expect(waiting()).toBe(0);
  });

  it('makes each row’s tokens once, and none for a row with no substring value: filling a rebuilt generation’s index, and taking rows in', async () => {
    // The store's function, counted (same answers).
    let made = 0;
    sqlite.db.function('substring_tokens', { deterministic: true, varargs: true }, (accountId: unknown, ...values: unknown[]) => {
      made++;
      return substringTokens(String(accountId), values.map(String));
    });
    const generation = await store.startRebuild(schema.name);
    const docs = [...Array.from({ length: 300 }, (_, i) => doc(`Wayne ${i}`)), ...Array.from({ length: 20 }, () => doc(''))];
    await store.commit(schema.name, docs, { generation, position: { commit: BigInt(seq), prepare: BigInt(seq) } });
    await store.promote(schema.name, generation);
    expect(made).toBe(300);
    made = 0;
    await store.commit(schema.name, [...Array.from({ length: 120 }, (_, i) => doc(`Stark ${i}`)), doc('')], {
      generation,
      position: { commit: BigInt(seq), prepare: BigInt(seq) },
    });
    expect(made).toBe(120);
    expect((await store.find(schema.name, { accountId: 'acc', filters: { company: 'stark 11' }, order: 'oldest', offset: 0, limit: 20 })).total).toBe(11);
  });

  it('goes on finding and erasing once the collection’s substring field is made exact, over a generation indexed before', async () => {
    const a = doc('Gringotts');
    await commit([a]);
    const exact = { name: schema.name, filters: { email: 'exact-ci' as const, company: 'exact-ci' as const } };
    const later = new SqliteReadStore(sqlite.db);
    await later.ensureCollection(exact);
    const found = await later.find(schema.name, { accountId: 'acc', filters: { company: 'gringotts' }, order: 'newest', offset: 0, limit: 10 });
    expect(found.documents.map((d) => d.id)).toEqual([a.id]);
    await later.erase(schema.name, [a.id]);
    expect(await later.get(schema.name, 'acc', a.id)).toBeNull();
  });

  it('blanks every filter column of an erased record, one its collection no longer filters on too (a generation an earlier version made)', async () => {
    const a = doc('Gringotts');
    await commit([a]);
    await find('gringotts'); // its tokens taken into the index
    expect(indexed('gringotts')).toEqual([a.seq]);
    const fewer = { name: schema.name, filters: { email: 'exact-ci' as const } };
    const later = new SqliteReadStore(sqlite.db);
    await later.ensureCollection(fewer);
    await later.erase(schema.name, [a.id]);
    expect(sqlite.db.prepare(`SELECT fields, deleted, f_email, f_company FROM ${t} WHERE id = ?`).get(a.id)).toEqual({
      fields: '{}',
      deleted: 1,
      f_email: '',
      f_company: '',
    });
    expect(indexed('gringotts')).toEqual([]);
  });

  it('takes a large commit’s tokens in with it', async () => {
    await commit(Array.from({ length: 150 }, (_, i) => doc(`Vandelay ${i}`)));
    expect(waiting()).toBe(0);
    expect(indexed('vandelay 149')).toHaveLength(1);
  });

  it('takes an erased record’s tokens out as the erasure is stored, waiting or not', async () => {
    const [a, b] = [doc('Umbrella Corp'), doc('Umbrella Health')];
    await commit([a]);
    await find('umbrella'); // a is indexed
    await commit([b]); // b waits
    await store.erase(schema.name, [a.id, b.id]);
    expect({ waiting: waiting(), indexed: indexed('umbrella') }).toEqual({ waiting: 0, indexed: [] });
    expect(await find('umbrella')).toEqual([]);
  });

  it('finds what another process committed, taking its rows in, and follows a change of an exact and a substring field together', async () => {
    const db = openSqliteDatabase(sqlite.file, { durable: false });
    const other = new SqliteReadStore(db);
    await other.ensureCollection(schema);
    try {
      const a = doc('Massive Dynamic');
      await other.commit(schema.name, [a], { generation: 1, position: { commit: 1n, prepare: 1n } });
      expect(await find('dynamic')).toEqual(['Massive Dynamic']);
      expect(waiting()).toBe(0);
      // The upsert's path (an exact filter's value changes too), not the rewrite's.
      const changed = { ...a, revision: 1, fields: { company: 'Wayne Enterprises', email: 'other@x.io' } };
      await other.commit(schema.name, [changed], { generation: 1, position: { commit: 2n, prepare: 2n } });
      expect({ old: await find('dynamic'), now: await find('wayne') }).toEqual({ old: [], now: ['Wayne Enterprises'] });
    } finally {
      await other.close();
    }
  });

  it('answers a find at once while another process holds the write lock, rows waiting or not', async () => {
    const db = openSqliteDatabase(sqlite.file, { durable: false });
    try {
      const a = doc('Cyberdyne');
      await commit([a]);
      await find('cyberdyne');
      await commit([doc('Cyberdyne Labs')]); // waits for the index
      db.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      // Through the account's rows, not the index, since the waiting row cannot be taken in now.
      expect(await find('cyberdyne')).toEqual(['Cyberdyne Labs', 'Cyberdyne']);
      expect(await find('labs')).toEqual(['Cyberdyne Labs']);
      // Well within the 5 s a write would wait for the lock.
      expect(Date.now() - started).toBeLessThan(2500);
      db.exec('ROLLBACK');
      expect(await find('labs')).toEqual(['Cyberdyne Labs']);
      expect(waiting()).toBe(0);
    } finally {
      db.close();
    }
  });

  it('takes an erased record’s tokens out of a generation another process built and promoted since, and out of the one it replaced', async () => {
    const db = openSqliteDatabase(sqlite.file, { durable: false });
    const builder = new SqliteReadStore(db);
    await builder.ensureCollection(schema);
    try {
      const [a, b] = [doc('Oscorp'), doc('Oscorp Labs')];
      await commit([a, b]);
      await find('oscorp');
      const generation = await builder.startRebuild(schema.name);
      await builder.commit(schema.name, [a, b], { generation, position: { commit: 100_000n, prepare: 100_000n } });
      await store.erase(schema.name, [a.id]); // while the other builds
      await builder.commit(schema.name, [{ ...a, revision: 1, deleted: true, fields: {} }], { generation, position: { commit: 100_001n, prepare: 100_001n } });
      await builder.promote(schema.name, generation);
      await store.erase(schema.name, [b.id]);
      const index = (g: number, company: string) =>
        sqlite.db
          .prepare(`SELECT rowid FROM substrings_buyers__g${g} WHERE substrings_buyers__g${g} MATCH ?`)
          .pluck()
          .all(substringQuery('acc', 0, company));
      expect({ live: index(generation, 'oscorp'), replaced: index(1, 'oscorp') }).toEqual({ live: [], replaced: [] });
      expect(await find('oscorp')).toEqual([]);
    } finally {
      await builder.close();
    }
  });

  it('moves a store whose index was kept row by row (before) to the rows waiting, at its next start', async () => {
    const a = doc('Soylent');
    await commit([a]);
    await find('soylent');
    // The index as the service kept it before: triggers that wrote every row's tokens at once.
    const s = `substrings_${t}`;
    sqlite.db.exec(`
      DROP TABLE substrings_pending_${t};
      DROP TRIGGER ${s}_insert; DROP TRIGGER ${s}_update; DROP TRIGGER ${s}_delete;
      CREATE TRIGGER ${s}_update AFTER UPDATE ON ${t} WHEN OLD.f_company IS NOT NEW.f_company BEGIN
        DELETE FROM ${s} WHERE rowid = OLD.seq;
        INSERT INTO ${s} (rowid, tokens) SELECT NEW.seq, v FROM (SELECT substring_tokens(NEW.account_id, NEW.f_company) AS v) WHERE v != '';
      END;
    `);
    sqlite.db.prepare(`UPDATE ${t} SET f_company = 'soylent green', revision = 1 WHERE id = ?`).run(a.id);
    store = new SqliteReadStore(sqlite.db); // the next start (the same file)
    await store.ensureCollection(schema);
    expect(await find('green')).toEqual(['Soylent']);
    const b = doc('Tyrell');
    await commit([b]);
    expect(waiting()).toBe(1);
    expect(await find('tyrell')).toEqual(['Tyrell']);
  });
});
