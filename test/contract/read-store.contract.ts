import { randomUUID } from 'node:crypto';
import { schemaFingerprint } from '../../src/read-store/generation-rules';
import {
  CollectionSchema,
  FilterNotBuiltError,
  GenerationReplacedError,
  ParkedStreamMovedError,
  ReadDocument,
  ReadStore,
  RebuildBehindError,
} from '../../src/read-store/read-store.port';

/** What every ReadStore adapter must do. Collections and checkpoints are named per run. */
export function readStoreContract(adapter: string, open: () => Promise<{ store: ReadStore; dispose(): Promise<void> }>) {
  describe(`ReadStore contract: ${adapter}`, () => {
    let store: ReadStore;
    let dispose: () => Promise<void>;
    const run = randomUUID().slice(0, 8);
    const schema: CollectionSchema = {
      name: `contract_${run}`,
      filters: { email: 'exact-ci', tel: 'exact', company: 'contains-ci' },
    };
    const checkpoint = (commit: bigint, generation = 1) => ({ generation, position: { commit, prepare: commit } });
    let seq = 0;
    const doc = (over: Partial<ReadDocument> = {}): ReadDocument => ({
      id: randomUUID(),
      accountId: 'acc-1',
      revision: 0,
      seq: ++seq,
      deleted: false,
      created: 1_700_000_000,
      fields: {},
      ...over,
    });
    const save = (...docs: ReadDocument[]) => store.commit(schema.name, docs, checkpoint(BigInt(seq)));

    beforeAll(async () => {
      ({ store, dispose } = await open());
      await store.ensureCollection(schema);
    });
    afterAll(() => dispose?.()); // unset when open() failed: that failure is the one to report

    it('creates a collection idempotently', async () => {
      await expect(store.ensureCollection(schema)).resolves.toBeUndefined();
    });

    it('stores a document and gets it back for its account only', async () => {
      const d = doc({ fields: { email: 'A@x.io', tel: '007' } });
      await save(d);
      await expect(store.get(schema.name, 'acc-1', d.id)).resolves.toEqual(d);
      await expect(store.get(schema.name, 'acc-2', d.id)).resolves.toBeNull();
    });

    it("finds the account's oldest live document, skipping tombstones and other accounts", async () => {
      const oldest: CollectionSchema = { name: `oldest_${run}`, filters: {} };
      await store.ensureCollection(oldest);
      await expect(store.oldest(oldest.name, 'acc-1')).resolves.toBeNull();
      const first = doc({ deleted: true });
      const second = doc();
      const third = doc();
      const foreign = doc({ accountId: 'acc-2', seq: 0 });
      await store.commit(oldest.name, [third, foreign, second, first], checkpoint(BigInt(seq)));
      await expect(store.oldest(oldest.name, 'acc-1')).resolves.toEqual(second);
      await expect(store.oldest(oldest.name, 'acc-2')).resolves.toEqual(foreign);
    });

    it('hides tombstones from get and find but returns them from getMany', async () => {
      const d = doc({ deleted: true, fields: { email: 'gone@x.io' } });
      await save(d);
      await expect(store.get(schema.name, 'acc-1', d.id)).resolves.toBeNull();
      expect((await store.find(schema.name, query({ email: 'gone@x.io' }))).total).toBe(0);
      expect((await store.getMany(schema.name, [d.id])).get(d.id)).toEqual(d);
    });

    it('never overwrites a document with an older or equal revision', async () => {
      const d = doc({ revision: 3, fields: { email: 'new@x.io' } });
      await save(d);
      await save({ ...d, revision: 2, fields: { email: 'old@x.io' } });
      await save({ ...d, revision: 3, fields: { email: 'same@x.io' } });
      await expect(store.get(schema.name, 'acc-1', d.id)).resolves.toMatchObject({ revision: 3, fields: { email: 'new@x.io' } });
      await save({ ...d, revision: 4, fields: { email: 'newer@x.io' } });
      await expect(store.get(schema.name, 'acc-1', d.id)).resolves.toMatchObject({ revision: 4, fields: { email: 'newer@x.io' } });
    });

    it('moves a document between filters as its newer revisions change them, whichever column changes', async () => {
      const byFilter = async (filters: Record<string, string>) =>
        (await store.find(schema.name, query(filters, { accountId: 'acc-moves' }))).documents.map((found) => found.revision);
      const d = doc({ accountId: 'acc-moves', fields: { name: 'Ann', email: 'ann@x.io', tel: '01', company: 'Acme' } });
      await save(d);
      // Only values no filter reads, then the unindexed filter, then each indexed one, then the tombstone.
      await save({ ...d, revision: 1, fields: { ...d.fields, name: 'Anne' } });
      await expect(store.get(schema.name, 'acc-moves', d.id)).resolves.toEqual({ ...d, revision: 1, fields: { ...d.fields, name: 'Anne' } });
      await expect(byFilter({ email: 'ann@x.io', tel: '01', company: 'acme' })).resolves.toEqual([1]);
      await save({ ...d, revision: 2, fields: { ...d.fields, company: 'Globex' } });
      await expect(byFilter({ company: 'acme' })).resolves.toEqual([]);
      await expect(byFilter({ company: 'globex' })).resolves.toEqual([2]);
      await save({ ...d, revision: 3, fields: { ...d.fields, company: 'Globex', email: 'anne@x.io' } });
      await expect(byFilter({ email: 'ann@x.io' })).resolves.toEqual([]);
      await expect(byFilter({ email: 'ANNE@x.io' })).resolves.toEqual([3]);
      await save({ ...d, revision: 4, fields: { ...d.fields, company: 'Globex', email: 'anne@x.io', tel: '02' } });
      await expect(byFilter({ tel: '01' })).resolves.toEqual([]);
      await expect(byFilter({ tel: '02', email: 'anne@x.io' })).resolves.toEqual([4]);
      await save({ ...d, revision: 5, deleted: true, fields: { ...d.fields, company: 'Globex', email: 'anne@x.io', tel: '02' } });
      await expect(byFilter({})).resolves.toEqual([]);
      await expect(byFilter({ tel: '02' })).resolves.toEqual([]);
      await expect(store.get(schema.name, 'acc-moves', d.id)).resolves.toBeNull();
      expect((await store.getMany(schema.name, [d.id])).get(d.id)).toMatchObject({ revision: 5, deleted: true });
    });

    const query = (filters: Record<string, string>, over: object = {}) => ({
      accountId: 'acc-f',
      filters,
      order: 'newest' as const,
      offset: 0,
      limit: 100,
      ...over,
    });

    describe('find', () => {
      const docs: ReadDocument[] = [];
      beforeAll(async () => {
        const rows = [
          { email: 'One@Example.com', tel: '0101', company: 'Acme Trading' },
          { email: 'two@example.com', tel: '0202', company: 'ACME 100%_off' },
          { email: 'one@example.com', tel: '0101', company: 'Other' },
          { email: 'three@example.com', tel: '0303', company: '' },
        ];
        for (const fields of rows) docs.push(doc({ accountId: 'acc-f', fields }));
        await save(...docs, doc({ accountId: 'acc-other', fields: rows[0] }));
      });
      const ids = (found: { documents: ReadDocument[] }) => found.documents.map((d) => d.id);

      it('lists an account newest first, with the total', async () => {
        const found = await store.find(schema.name, query({}));
        expect(ids(found)).toEqual([...docs].reverse().map((d) => d.id));
        expect(found.total).toBe(4);
      });

      it('lists oldest first when asked', async () => {
        expect(ids(await store.find(schema.name, query({}, { order: 'oldest', limit: 1 })))).toEqual([docs[0].id]);
      });

      it('pages with offset and limit; the total ignores paging', async () => {
        const found = await store.find(schema.name, query({}, { offset: 1, limit: 2 }));
        expect(ids(found)).toEqual([docs[2].id, docs[1].id]);
        expect(found.total).toBe(4);
      });

      it('pages past a seq with after, in either order, with filters; the total ignores paging', async () => {
        const newest = await store.find(schema.name, query({}, { after: docs[2].seq, limit: 2 }));
        expect(ids(newest)).toEqual([docs[1].id, docs[0].id]);
        expect(newest.total).toBe(4);
        expect(ids(await store.find(schema.name, query({}, { order: 'oldest', after: docs[1].seq })))).toEqual([docs[2].id, docs[3].id]);
        expect(ids(await store.find(schema.name, query({ tel: '0101' }, { after: docs[2].seq })))).toEqual([docs[0].id]);
        expect(ids(await store.find(schema.name, query({ company: 'acme' }, { after: docs[1].seq })))).toEqual([docs[0].id]);
        expect(await store.find(schema.name, query({}, { after: docs[0].seq }))).toEqual({ documents: [], total: 4, capped: false });
      });

      it('leaves the count out when told (count: false): the same page, total 0', async () => {
        const found = await store.find(schema.name, query({}, { order: 'oldest', after: docs[0].seq, limit: 2, count: false }));
        expect(found).toEqual({
          documents: (await store.find(schema.name, query({}, { order: 'oldest', after: docs[0].seq, limit: 2 }))).documents,
          total: 0,
          capped: false,
        });
        expect(ids(found)).toEqual([docs[1].id, docs[2].id]);
      });

      it('matches exact-ci filters ignoring case', async () => {
        expect(ids(await store.find(schema.name, query({ email: 'ONE@example.COM' })))).toEqual([docs[2].id, docs[0].id]);
      });

      it('matches exact filters exactly', async () => {
        expect(ids(await store.find(schema.name, query({ tel: '0202' })))).toEqual([docs[1].id]);
        expect((await store.find(schema.name, query({ tel: '202' }))).total).toBe(0);
      });

      it('matches contains-ci filters as a literal substring', async () => {
        expect(ids(await store.find(schema.name, query({ company: 'acme' })))).toEqual([docs[1].id, docs[0].id]);
        expect(ids(await store.find(schema.name, query({ company: '100%_' })))).toEqual([docs[1].id]);
        expect((await store.find(schema.name, query({ company: '.*' }))).total).toBe(0);
      });

      it('takes regex metacharacters in contains-ci input literally', async () => {
        const literal = doc({ accountId: 'acc-f', fields: { email: 'regex@x.io', tel: '0909', company: 'Data.*(Labs' } });
        await save(literal);
        try {
          for (const text of ['a.*(', 'A.*(L', '(']) {
            expect(ids(await store.find(schema.name, query({ company: text })))).toEqual([literal.id]);
          }
          for (const text of ['[', '\\', '$', '^d', '.*x', 'a|o']) {
            expect((await store.find(schema.name, query({ company: text }))).total).toBe(0);
          }
        } finally {
          await save({ ...literal, revision: 1, deleted: true });
        }
      });

      it('matches a NUL in contains-ci input like any other character', async () => {
        const withNul = doc({ accountId: 'acc-nul', fields: { email: 'nul@x.io', tel: '0', company: 'a\0B' } });
        await save(withNul);
        try {
          const nulQuery = (company: string) => ({ ...query({ company }), accountId: 'acc-nul' });
          expect(ids(await store.find(schema.name, nulQuery('\0')))).toEqual([withNul.id]);
          expect(ids(await store.find(schema.name, nulQuery('A\0b')))).toEqual([withNul.id]);
          expect((await store.find(schema.name, nulQuery('a\0c'))).total).toBe(0);
        } finally {
          await save({ ...withNul, revision: 1, deleted: true });
        }
      });

      it('answers an empty page and a zero total past the end or for an unknown account', async () => {
        expect(await store.find(schema.name, query({}, { offset: 10 }))).toEqual({ documents: [], total: 4, capped: false });
        expect(await store.find(schema.name, query({}, { accountId: 'nobody' }))).toEqual({ documents: [], total: 0, capped: false });
      });

      it('combines filters with AND', async () => {
        const found = await store.find(schema.name, query({ email: 'one@example.com', company: 'acme' }));
        expect(ids(found)).toEqual([docs[0].id]);
        expect(found.total).toBe(1);
      });
    });

    it('changes nothing when a whole batch is replayed', async () => {
      const a = doc({ revision: 2, fields: { email: 'a@x.io' } });
      const b = doc({ revision: 0, fields: { email: 'b@x.io' } });
      await save(a, b);
      await save({ ...a, revision: 1, fields: { email: 'stale@x.io' } }, b);
      expect(await store.getMany(schema.name, [a.id, b.id, 'unknown-id'])).toEqual(
        new Map([
          [a.id, a],
          [b.id, b],
        ]),
      );
    });

    it('finds nothing for no ids or unknown ids', async () => {
      expect((await store.getMany(schema.name, [])).size).toBe(0);
      expect((await store.getMany(schema.name, [randomUUID()])).size).toBe(0);
    });

    it('pages through every document in id order, tombstones and every account included', async () => {
      const paged: CollectionSchema = { name: `paged_${run}`, filters: {} };
      await store.ensureCollection(paged);
      await expect(store.pageById(paged.name, '', 10)).resolves.toEqual([]);
      // Ids that sort differently as numbers and as text, as the change feed's do.
      const docs = ['9', '10', 'b', 'a', '100'].map((id, i) => doc({ id, deleted: i === 1, accountId: `acc-${i % 2}` }));
      await store.commit(paged.name, docs, checkpoint(BigInt(seq)));
      const byId = [...docs].sort((x, y) => (x.id < y.id ? -1 : 1));
      await expect(store.pageById(paged.name, '', 2)).resolves.toEqual(byId.slice(0, 2));
      await expect(store.pageById(paged.name, byId[1].id, 2)).resolves.toEqual(byId.slice(2, 4));
      await expect(store.pageById(paged.name, byId[3].id, 2)).resolves.toEqual(byId.slice(4));
      await expect(store.pageById(paged.name, byId[4].id, 2)).resolves.toEqual([]);
    });

    it('never moves a checkpoint backwards', async () => {
      const cas: CollectionSchema = { name: `cas_${run}`, filters: {} };
      await store.ensureCollection(cas);
      const at = (commit: bigint, prepare = commit) => ({ generation: 1, position: { commit, prepare } });
      const saved = async () => (await store.status(cas.name)).live.position;
      await store.commit(cas.name, [], at(100n));
      await store.commit(cas.name, [], at(99n));
      await store.commit(cas.name, [], at(100n, 99n));
      await expect(saved()).resolves.toEqual({ commit: 100n, prepare: 100n });
      await store.commit(cas.name, [], at(100n, 101n));
      await expect(saved()).resolves.toEqual({ commit: 100n, prepare: 101n });
      await Promise.all([5n, 300n, 7n, 200n].map((c) => store.commit(cas.name, [], at(c))));
      await expect(saved()).resolves.toEqual({ commit: 300n, prepare: 300n });
    });

    it('saves checkpoints with the live generation, and failures until the next commit', async () => {
      const position = { commit: 12345678901234n, prepare: 12345678901230n };
      await store.commit(schema.name, [], { generation: 1, position });
      expect((await store.status(schema.name)).live).toMatchObject({ generation: 1, position, failure: null });
      const failure = { streamId: 'customer-x', revision: 3, error: 'Unknown event type' };
      await store.recordFailure(schema.name, 1, failure);
      expect((await store.status(schema.name)).live.failure).toEqual(failure);
      await store.commit(schema.name, [], { generation: 1, position });
      expect((await store.status(schema.name)).live.failure).toBeNull();
    });

    describe('parked streams', () => {
      const parking: CollectionSchema = { name: `parking_${run}`, filters: {} };
      const at = (commit: bigint, generation = 1) => ({ generation, position: { commit, prepare: commit } });
      const event = (streamId: string, revision: number, commit: bigint, error = 'Unknown event type Mystery') => ({
        streamId,
        revision,
        position: { commit, prepare: commit },
        type: 'Mystery',
        error,
      });
      const operator = { by: 'ops', at: 1_700_000_000_000 };

      beforeAll(async () => {
        await store.ensureCollection(parking);
      });

      it('parks a stream with its commit, documents and checkpoint together, and counts the events waiting behind its first', async () => {
        const folded = doc();
        await store.commit(parking.name, [folded], at(20n), { parked: [event('customer-a', 2, 20n)] });
        expect((await store.status(parking.name)).live.position).toEqual({ commit: 20n, prepare: 20n });
        await expect(store.getMany(parking.name, [folded.id])).resolves.toEqual(new Map([[folded.id, folded]]));
        await store.commit(parking.name, [], at(21n), { parked: [event('customer-a', 3, 21n), event('customer-a', 4, 21n)] });
        // The same batch folded again (a crash before its checkpoint was known) counts nothing twice.
        await store.commit(parking.name, [], at(21n), { parked: [event('customer-a', 3, 21n), event('customer-a', 4, 21n)] });
        const [parked] = await store.parked(parking.name, 1);
        expect(parked).toEqual({
          streamId: 'customer-a',
          first: { revision: 2, position: { commit: 20n, prepare: 20n }, type: 'Mystery', error: 'Unknown event type Mystery' },
          parkedAt: expect.any(Number),
          waiting: 2,
          lastRevision: 4,
          request: null,
        });
        await expect(store.parkedCount(parking.name, 1)).resolves.toEqual({ streams: 1, events: 3 });
      });

      it('lists streams oldest parked first, bounded when asked, and keeps errors bounded in length', async () => {
        await store.commit(parking.name, [], at(30n), { parked: [event('customer-b', 0, 30n, 'x'.repeat(5000))] });
        const all = await store.parked(parking.name, 1);
        expect(all.map((s) => s.streamId)).toEqual(['customer-a', 'customer-b']);
        expect(all[1].first.error.length).toBeLessThanOrEqual(500);
        expect((await store.parked(parking.name, 1, 1)).map((s) => s.streamId)).toEqual(['customer-a']);
      });

      it('records requests with a stamp that moves on, and settles them: unparked, parked further on, skips kept', async () => {
        const before = await store.parkedRequests(parking.name, 1);
        await expect(
          store.requestParked(parking.name, 1, ['customer-a', 'customer-unknown'], { action: 'skip', reason: 'bad import', ...operator }),
        ).resolves.toEqual(['customer-a']);
        expect(await store.parkedRequests(parking.name, 1)).toBeGreaterThan(before);
        await expect(store.requestParked(parking.name, 1, 'all', { action: 'retry', reason: null, ...operator })).resolves.toEqual([
          'customer-a',
          'customer-b',
        ]);
        expect((await store.parked(parking.name, 1)).map((s) => s.request?.action)).toEqual(['retry', 'retry']);

        const [a, b] = await store.parked(parking.name, 1);
        const skip = { ...a.first, streamId: 'customer-a', by: 'ops', at: 1_700_000_000_001, reason: 'bad import' };
        const later = { ...b, first: { ...b.first, revision: 1, error: 'still broken' }, waiting: 0, lastRevision: 1 };
        await store.commit(parking.name, [], at(30n), {
          settled: [
            { streamId: 'customer-a', now: null, seen: a },
            { streamId: 'customer-b', now: later, seen: b },
          ],
          skipped: [skip],
        });
        expect(await store.parked(parking.name, 1)).toEqual([{ ...later, request: null }]);
        await expect(store.skipped(parking.name)).resolves.toEqual([{ ...skip, generation: 1 }]);
        await expect(store.parkedCount(parking.name, 1)).resolves.toEqual({ streams: 1, events: 1 });
      });

      it('keeps parked streams per generation: a rebuild starts clean, and takes its own', async () => {
        const building = await store.startRebuild(parking.name);
        await expect(store.parked(parking.name, building)).resolves.toEqual([]);
        await expect(store.parkedCount(parking.name, building)).resolves.toEqual({ streams: 0, events: 0 });
        await store.commit(parking.name, [], at(40n, building), { parked: [event('customer-c', 0, 40n)] });
        expect((await store.parked(parking.name, building)).map((s) => s.streamId)).toEqual(['customer-c']);
        expect((await store.parked(parking.name, 1)).map((s) => s.streamId)).toEqual(['customer-b']);
        const [c] = await store.parked(parking.name, building);
        const skip = { ...c.first, streamId: 'customer-c', by: 'ops', at: 1_700_000_000_002, reason: 'in the rebuild' };
        await store.commit(parking.name, [], at(41n, building), { settled: [{ streamId: 'customer-c', now: null, seen: c }], skipped: [skip] });
        await store.abandonRebuild(parking.name, building);
        // What the generation parked goes with it; the record of who skipped what stays.
        await expect(store.parked(parking.name, building)).resolves.toEqual([]);
        expect((await store.skipped(parking.name)).map((k) => [k.streamId, k.generation])).toEqual([
          ['customer-a', 1],
          ['customer-c', building],
        ]);
      });

      it('refuses a commit into a replaced generation, parking nothing', async () => {
        const building = await store.startRebuild(parking.name);
        await store.abandonRebuild(parking.name, building);
        await expect(store.commit(parking.name, [], at(50n, building), { parked: [event('customer-d', 0, 50n)] })).rejects.toBeInstanceOf(
          GenerationReplacedError,
        );
        await expect(store.parked(parking.name, building)).resolves.toEqual([]);
      });

      it('refuses a settlement of a stream parked further since it was read, and keeps a request made while one is settled', async () => {
        const one = async (streamId: string) => (await store.parked(parking.name, 1)).find((s) => s.streamId === streamId)!;
        await store.commit(parking.name, [], at(60n), { parked: [event('customer-e', 0, 60n)] });
        await store.requestParked(parking.name, 1, ['customer-e'], { action: 'retry', reason: null, ...operator });
        const seen = await one('customer-e');
        // Another folder (this one's lease lost) parks a later event of the stream meanwhile.
        await store.commit(parking.name, [], at(61n), { parked: [event('customer-e', 1, 61n)] });
        await expect(store.commit(parking.name, [], at(61n), { settled: [{ streamId: 'customer-e', now: null, seen }] })).rejects.toBeInstanceOf(
          ParkedStreamMovedError,
        );
        expect(await one('customer-e')).toMatchObject({ lastRevision: 1, waiting: 1, request: { action: 'retry' } });

        const read = await one('customer-e');
        const asked = { action: 'skip' as const, reason: 'asked meanwhile', by: 'ops', at: read.request!.at + 1 };
        await store.requestParked(parking.name, 1, ['customer-e'], asked);
        await store.commit(parking.name, [], at(61n), { settled: [{ streamId: 'customer-e', now: { ...read, request: null }, seen: read }] });
        expect((await one('customer-e')).request).toEqual(asked);
        await store.commit(parking.name, [], at(61n), { settled: [{ streamId: 'customer-e', now: null, seen: await one('customer-e') }] });
        expect(await store.parked(parking.name, 1)).toEqual([expect.objectContaining({ streamId: 'customer-b' })]);
      });

      it('writes nothing of a settlement it refuses: neither the documents it folded nor its skip', async () => {
        await store.commit(parking.name, [], at(70n), { parked: [event('customer-f', 0, 70n)] });
        await store.requestParked(parking.name, 1, ['customer-f'], { action: 'skip', reason: 'refused', ...operator });
        const seen = (await store.parked(parking.name, 1)).find((s) => s.streamId === 'customer-f')!;
        // Another folder (this one's lease lost) parks a later event of the stream meanwhile.
        await store.commit(parking.name, [], at(71n), { parked: [event('customer-f', 1, 71n)] });
        const folded = doc();
        const skip = { ...seen.first, streamId: 'customer-f', by: 'ops', at: 1_700_000_000_003, reason: 'refused' };
        await expect(
          store.commit(parking.name, [folded], at(71n), { settled: [{ streamId: 'customer-f', now: null, seen }], skipped: [skip] }),
        ).rejects.toBeInstanceOf(ParkedStreamMovedError);
        await expect(store.getMany(parking.name, [folded.id])).resolves.toEqual(new Map());
        expect((await store.skipped(parking.name)).map((k) => k.streamId)).not.toContain('customer-f');
        expect((await store.parked(parking.name, 1)).find((s) => s.streamId === 'customer-f')).toMatchObject({ lastRevision: 1, request: { action: 'skip' } });
      });
    });

    describe('generations', () => {
      const gens: CollectionSchema = { name: `generations_${run}`, filters: { email: 'exact-ci' } };
      const at = (commit: bigint, generation: number) => ({ generation, position: { commit, prepare: commit } });
      const listed = async () => (await store.find(gens.name, query({}, { accountId: 'acc-1' }))).documents.map((d) => d.id);
      const original = doc({ fields: { email: 'old@x.io' } });
      const rebuilt = { ...original, fields: { email: 'new@x.io' } };
      let rebuilding: number;

      beforeAll(async () => {
        await store.ensureCollection(gens);
      });

      it('starts a new collection with generation 1 live, no checkpoint and no rebuild', async () => {
        expect(await store.status(gens.name)).toEqual({
          live: { generation: 1, position: null, failure: null, updatedAt: expect.any(Number) },
          building: null,
        });
        await store.commit(gens.name, [original], at(10n, 1));
      });

      it('rebuilds into a new, empty generation that reads do not see', async () => {
        rebuilding = await store.startRebuild(gens.name);
        expect(rebuilding).toBeGreaterThan(1);
        expect((await store.status(gens.name)).building).toMatchObject({ generation: rebuilding, position: null });
        await expect(store.getMany(gens.name, [original.id], rebuilding)).resolves.toEqual(new Map());
        await store.commit(gens.name, [rebuilt], at(5n, rebuilding));
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(original);
        await expect(store.getMany(gens.name, [original.id], rebuilding)).resolves.toEqual(new Map([[original.id, rebuilt]]));
      });

      it('refuses to promote a generation behind the live one, changing nothing', async () => {
        await expect(store.promote(gens.name, rebuilding)).rejects.toBeInstanceOf(RebuildBehindError);
        const status = await store.status(gens.name);
        expect(status.live.generation).toBe(1);
        expect(status.building?.generation).toBe(rebuilding);
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(original);
      });

      it('promotes a caught-up generation atomically; the old one takes no more commits', async () => {
        await store.commit(gens.name, [], at(10n, rebuilding));
        await store.promote(gens.name, rebuilding);
        expect(await store.status(gens.name)).toMatchObject({ live: { generation: rebuilding }, building: null });
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(rebuilt);
        expect(await listed()).toEqual([original.id]);
        const late = doc();
        await expect(store.commit(gens.name, [late], at(11n, 1))).rejects.toBeInstanceOf(GenerationReplacedError);
        await expect(store.getMany(gens.name, [late.id], 1)).rejects.toBeInstanceOf(GenerationReplacedError);
        await expect(store.getMany(gens.name, [late.id])).resolves.toEqual(new Map());
        await expect(store.promote(gens.name, 1)).rejects.toBeInstanceOf(GenerationReplacedError);
      });

      it('drops retired generations only, leaving the live one as it was', async () => {
        await store.dropRetired(gens.name, 60_000);
        await store.dropRetired(gens.name, 0);
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(rebuilt);
        expect((await store.status(gens.name)).live).toMatchObject({ generation: rebuilding, position: { commit: 10n } });
      });

      it('drops an interrupted rebuild when the next one starts, and never reuses its number', async () => {
        const interrupted = await store.startRebuild(gens.name);
        await store.commit(gens.name, [doc()], at(1n, interrupted));
        const next = await store.startRebuild(gens.name);
        expect(next).toBeGreaterThan(interrupted);
        expect((await store.status(gens.name)).building).toMatchObject({ generation: next, position: null });
        await expect(store.commit(gens.name, [doc()], at(2n, interrupted))).rejects.toBeInstanceOf(GenerationReplacedError);
        await expect(store.promote(gens.name, interrupted)).rejects.toBeInstanceOf(GenerationReplacedError);
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(rebuilt);
      });

      it('abandons a building generation at once, and leaves any other generation alone', async () => {
        const abandoned = (await store.status(gens.name)).building!.generation;
        await store.commit(gens.name, [doc()], at(3n, abandoned));
        await store.abandonRebuild(gens.name, abandoned);
        expect((await store.status(gens.name)).building).toBeNull();
        await expect(store.commit(gens.name, [doc()], at(4n, abandoned))).rejects.toBeInstanceOf(GenerationReplacedError);
        const { live } = await store.status(gens.name);
        await store.abandonRebuild(gens.name, live.generation);
        await store.abandonRebuild(gens.name, abandoned);
        expect((await store.status(gens.name)).live.generation).toBe(live.generation);
        await expect(store.get(gens.name, 'acc-1', original.id)).resolves.toEqual(rebuilt);

        // A rebuild replaced by a later one gives up nothing of the later one's.
        const replaced = await store.startRebuild(gens.name);
        const later = await store.startRebuild(gens.name);
        await store.commit(gens.name, [doc()], at(5n, later));
        await store.abandonRebuild(gens.name, replaced);
        expect((await store.status(gens.name)).building).toMatchObject({ generation: later, position: { commit: 5n } });
        await store.abandonRebuild(gens.name, later);
        expect((await store.status(gens.name)).building).toBeNull();
      });
    });

    describe('erasure', () => {
      const erasing: CollectionSchema = { name: `erasing_${run}`, filters: schema.filters };
      const at = (commit: bigint, generation: number) => ({ generation, position: { commit, prepare: commit } });

      it('leaves the document a tombstone with no value in the live and the building generation, found by no filter', async () => {
        await store.ensureCollection(erasing);
        const person = doc({ fields: { email: 'Ada@X.io', tel: '0912', company: 'Engines', name: 'Ada' } });
        const other = doc({ fields: { email: 'bob@x.io', company: 'Engines' } });
        await store.commit(erasing.name, [person, other], at(1n, 1));
        const building = await store.startRebuild(erasing.name);
        await store.commit(erasing.name, [person, other], at(1n, building));

        await store.erase(erasing.name, [person.id]);
        await store.erase(erasing.name, [person.id]); // again: nothing left to change

        const tombstone = { ...person, deleted: true, fields: {} };
        await expect(store.getMany(erasing.name, [person.id, other.id])).resolves.toEqual(
          new Map([
            [person.id, tombstone],
            [other.id, other],
          ]),
        );
        await expect(store.getMany(erasing.name, [person.id], building)).resolves.toEqual(new Map([[person.id, tombstone]]));
        await expect(store.get(erasing.name, 'acc-1', person.id)).resolves.toBeNull();
        for (const filters of [{ email: 'ada@x.io' }, { tel: '0912' }, { company: 'engines' }] as Record<string, string>[]) {
          const found = await store.find(erasing.name, { accountId: 'acc-1', filters, order: 'newest', offset: 0, limit: 10 });
          expect(found.documents.map((d) => d.id)).not.toContain(person.id);
        }
        // A later fold of the erasure event (a newer revision) still lands.
        const erased = { ...tombstone, revision: person.revision + 1 };
        await store.commit(erasing.name, [erased], at(2n, 1));
        await expect(store.getMany(erasing.name, [person.id])).resolves.toEqual(new Map([[person.id, erased]]));
      });

      it('changes nothing for an id it does not hold', async () => {
        await expect(store.erase(erasing.name, [randomUUID()])).resolves.toBeUndefined();
      });
    });

    describe('schemas', () => {
      const at = (commit: bigint, generation: number) => ({ generation, position: { commit, prepare: commit } });
      const before: CollectionSchema = { name: `schemas_${run}`, filters: { email: 'exact-ci' } };
      const after: CollectionSchema = { ...before, filters: { tel: 'exact', email: 'exact-ci' } };
      const listed = async (filters: Record<string, string>) =>
        (await store.find(before.name, query(filters, { accountId: 'acc-s' }))).documents.map((d) => d.id).sort();
      const ann = doc({ accountId: 'acc-s', fields: { email: 'Ann@x.io', tel: '01' } });
      const bob = doc({ accountId: 'acc-s', fields: { email: 'Bob@x.io', tel: '02' } });

      it('keeps with each generation the fingerprint of the schema it was built with', async () => {
        await store.ensureCollection(before);
        expect(await store.fingerprint(before.name, 1)).toBe(schemaFingerprint(before));
        await store.commit(before.name, [ann], at(1n, 1));
        // The code's schema gains a filter: the live generation keeps its own until a rebuild replaces it.
        await store.ensureCollection(after);
        expect(await store.fingerprint(before.name, 1)).toBe(schemaFingerprint(before));
        const rebuilding = await store.startRebuild(after.name);
        expect(await store.fingerprint(after.name, rebuilding)).toBe(schemaFingerprint(after));
        expect(schemaFingerprint(after)).not.toBe(schemaFingerprint(before));
      });

      it('serves and takes commits in the live generation by its own filters while a rebuild adds one, which works once promoted', async () => {
        const { building } = await store.status(after.name);
        await store.commit(after.name, [bob], at(2n, 1));
        await expect(listed({ email: 'BOB@x.io' })).resolves.toEqual([bob.id]);
        await expect(listed({})).resolves.toEqual([ann.id, bob.id].sort());
        await expect(store.find(after.name, query({ tel: '01' }, { accountId: 'acc-s' }))).rejects.toBeInstanceOf(FilterNotBuiltError);
        await store.commit(after.name, [ann, bob], at(2n, building!.generation));
        await store.promote(after.name, building!.generation);
        await expect(listed({ tel: '01' })).resolves.toEqual([ann.id]);
        await expect(listed({ tel: '02', email: 'bob@x.io' })).resolves.toEqual([bob.id]);
      });
    });

    describe('leases', () => {
      const lease = `lease_${run}`;
      const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

      it('gives a free lease to one holder, renews it for that holder only, and refuses others while it runs', async () => {
        await expect(store.acquireLease(lease, 'one', 60_000)).resolves.toBe('one');
        await expect(store.acquireLease(lease, 'two', 60_000)).resolves.toBe('one');
        await expect(store.acquireLease(lease, 'one', 60_000)).resolves.toBe('one');
        await expect(store.acquireLease(lease, 'two', 60_000)).resolves.toBe('one');
      });

      it('lets another holder take it once released, and ignores a release by one who does not hold it', async () => {
        await store.releaseLease(lease, 'two');
        await expect(store.acquireLease(lease, 'two', 60_000)).resolves.toBe('one');
        await store.releaseLease(lease, 'one');
        await expect(store.acquireLease(lease, 'two', 60_000)).resolves.toBe('two');
        await expect(store.acquireLease(lease, 'one', 60_000)).resolves.toBe('two');
      });

      it('lets another holder take it once it expired, and not before', async () => {
        const short = `${lease}_short`;
        await expect(store.acquireLease(short, 'one', 300)).resolves.toBe('one');
        await expect(store.acquireLease(short, 'two', 300)).resolves.toBe('one');
        await wait(600);
        await expect(store.acquireLease(short, 'two', 60_000)).resolves.toBe('two');
        await expect(store.acquireLease(short, 'one', 300)).resolves.toBe('two');
      });

      it('gives a free lease to exactly one of many racing holders', async () => {
        const raced = `${lease}_raced`;
        const holders = Array.from({ length: 8 }, (_, n) => `racer-${n}`);
        const answers = await Promise.all(holders.map((h) => store.acquireLease(raced, h, 60_000)));
        const winners = holders.filter((h, n) => answers[n] === h);
        expect(winners).toHaveLength(1);
        expect(new Set(answers)).toEqual(new Set(winners));
      });

      it('lets a holder replace the one it names (known dead), and no other', async () => {
        const replaced = `${lease}_replaced`;
        await expect(store.acquireLease(replaced, 'dead', 60_000)).resolves.toBe('dead');
        await expect(store.acquireLease(replaced, 'two', 60_000, 'someone-else')).resolves.toBe('dead');
        await expect(store.acquireLease(replaced, 'two', 60_000, 'dead')).resolves.toBe('two');
        await expect(store.acquireLease(replaced, 'dead', 60_000)).resolves.toBe('two');
      });

      it('keeps leases of different names apart', async () => {
        await expect(store.acquireLease(`${lease}_a`, 'one', 60_000)).resolves.toBe('one');
        await expect(store.acquireLease(`${lease}_b`, 'two', 60_000)).resolves.toBe('two');
      });
    });
  });
}
