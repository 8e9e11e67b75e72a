import { randomUUID } from 'node:crypto';
import {
  AppendResult,
  EventStore,
  NewEvent,
  PLAINTEXT_SCHEMA_VERSION,
  START,
  StoredEvent,
  WrongExpectedRevisionError,
  comparePositions,
} from '../../src/event-store/event-store.port';

/**
 * What every EventStore adapter must do. Each adapter's spec calls this with a factory that gives
 * a fresh, empty store (or one whose streams no other run uses: streams are named per run).
 */
export function eventStoreContract(adapter: string, open: () => Promise<{ store: EventStore; dispose(): Promise<void> }>) {
  describe(`EventStore contract: ${adapter}`, () => {
    let store: EventStore;
    let dispose: () => Promise<void>;
    const run = randomUUID().slice(0, 8);
    const stream = (name: string) => `contract${run}-${name}`;
    const event = (type = 'Happened', data: Record<string, unknown> = { n: 1 }): NewEvent => ({
      id: randomUUID(),
      type,
      data,
      metadata: { accountId: 'acc', correlationId: 'corr', causationId: 'cause', schemaVersion: 1 },
    });

    beforeAll(async () => ({ store, dispose } = await open()));
    afterAll(() => dispose?.()); // unset when open() failed: that failure is the one to report

    /**
     * Collects the events of streams starting with `prefix` (this run's by default) after `from`,
     * until `count` have arrived. The store is asked to filter by the prefix, so events of other
     * runs or applications on a shared server stay out of the way.
     */
    async function collect(from = START, count: number, prefix = `contract${run}-`): Promise<StoredEvent[]> {
      const abort = new AbortController();
      const seen: StoredEvent[] = [];
      const timer = setTimeout(() => abort.abort(), 10_000);
      const batches = store.subscribeToAll(from, { signal: abort.signal, maxBatchSize: 3, streamPrefixes: [prefix] });
      for await (const batch of batches) {
        expect(batch.events.length).toBeLessThanOrEqual(3);
        for (const e of batch.events) expect(e.streamId.startsWith(prefix)).toBe(true);
        seen.push(...batch.events);
        if (seen.length >= count) break;
      }
      clearTimeout(timer);
      abort.abort();
      return seen;
    }

    it('appends to a new stream and reads it back as written', async () => {
      const e = event('Created', { name: 'Ada', nested: { ok: true } });
      const result = await store.appendToStream(stream('a'), [e], 'no_stream');
      expect(result.revision).toBe(0);
      const [read] = await store.readStream(stream('a'));
      expect(read).toMatchObject({ id: e.id, streamId: stream('a'), revision: 0, type: 'Created', data: e.data, metadata: e.metadata });
      expect(comparePositions(read.position, result.position)).toBe(0);
      expect(read.recordedAt).toBeInstanceOf(Date);
      expect(Math.abs(read.recordedAt.getTime() - Date.now())).toBeLessThan(60_000);
    });

    it('stores an event appended without a schema version as plaintext (version 1): nothing sealed it', async () => {
      const { schemaVersion: _, ...metadata } = event().metadata;
      await store.appendToStream(stream('unversioned'), [{ ...event(), metadata }], 'no_stream');
      const [read] = await store.readStream(stream('unversioned'));
      expect(read.metadata).toEqual({ ...metadata, schemaVersion: PLAINTEXT_SCHEMA_VERSION });
    });

    it('gives consecutive revisions and rising positions within one append', async () => {
      const result = await store.appendToStream(stream('b'), [event(), event(), event()], 'no_stream');
      expect(result.revision).toBe(2);
      const events = await store.readStream(stream('b'));
      expect(events.map((e) => e.revision)).toEqual([0, 1, 2]);
      expect(comparePositions(events[0].position, events[1].position)).toBe(-1);
      expect(comparePositions(events[1].position, events[2].position)).toBe(-1);
    });

    it('reads a stream that does not exist as empty', async () => {
      await expect(store.readStream(stream('missing'))).resolves.toEqual([]);
      await expect(store.readStream(stream('missing'), 3)).resolves.toEqual([]);
    });

    it('reads a stream from a revision on: the tail, or nothing past the end', async () => {
      const appended = [event(), event(), event()];
      await store.appendToStream(stream('tail'), appended, 'no_stream');
      const tail = await store.readStream(stream('tail'), 1);
      expect(tail.map((e) => [e.revision, e.id])).toEqual([
        [1, appended[1].id],
        [2, appended[2].id],
      ]);
      expect(await store.readStream(stream('tail'), 0)).toHaveLength(3);
      expect(await store.readStream(stream('tail'), 3)).toEqual([]);
    });

    it('reads at most maxCount events from a revision: a page of a stream, or what is left of it', async () => {
      const appended = Array.from({ length: 7 }, () => event());
      await store.appendToStream(stream('range'), appended, 'no_stream');
      const page = await store.readStream(stream('range'), 2, 3);
      expect(page.map((e) => [e.revision, e.id])).toEqual([2, 3, 4].map((r) => [r, appended[r].id]));
      expect((await store.readStream(stream('range'), 5, 10)).map((e) => e.revision)).toEqual([5, 6]);
      expect((await store.readStream(stream('range'), 0, 1)).map((e) => e.id)).toEqual([appended[0].id]);
      expect(await store.readStream(stream('range'), 7, 3)).toEqual([]);
      expect(await store.readStream(stream('missing'), 0, 3)).toEqual([]);
    });

    it("reads a stream's last event, as a forward read has it, and null for a stream that does not exist", async () => {
      await store.appendToStream(stream('last'), [event('First')], 'no_stream');
      await store.appendToStream(stream('last'), [event('Second'), event('Third', { n: 3 })], 0);
      const last = await store.readLastEvent(stream('last'));
      const [third] = await store.readStream(stream('last'), 2);
      expect(last).toEqual(third);
      expect(last).toMatchObject({ revision: 2, type: 'Third', data: { n: 3 } });
      await expect(store.readLastEvent(stream('missing'))).resolves.toBeNull();
    });

    it.each([
      ['no_stream on an existing stream', 'no_stream' as const],
      ['a revision behind the stream', 0],
      ['a revision ahead of the stream', 5],
    ])('refuses %s with WrongExpectedRevisionError', async (_, expected) => {
      const s = stream(`conflict-${String(expected)}`);
      await store.appendToStream(s, [event(), event()], 'no_stream');
      await expect(store.appendToStream(s, [event()], expected)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('refuses a revision on a stream that does not exist', async () => {
      await expect(store.appendToStream(stream('none'), [event()], 0)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    });

    it('appends at the expected revision and with "any"', async () => {
      const s = stream('c');
      await store.appendToStream(s, [event()], 'no_stream');
      await expect(store.appendToStream(s, [event()], 0)).resolves.toMatchObject({ revision: 1 });
      await expect(store.appendToStream(s, [event()], 'any')).resolves.toMatchObject({ revision: 2 });
    });

    it('lets exactly one of several racing appenders win a revision', async () => {
      const s = stream('race');
      await store.appendToStream(s, [event()], 'no_stream');
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => store.appendToStream(s, [event()], 0)));
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results.filter((r) => r.status === 'rejected')) {
        expect(r.reason).toBeInstanceOf(WrongExpectedRevisionError);
      }
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('answers a retried append of the same events as the first time, without storing them twice', async () => {
      const s = stream('retry');
      const events = [event(), event()];
      const first = await store.appendToStream(s, events, 'no_stream');
      const again = await store.appendToStream(s, events, 'no_stream');
      expect(again.revision).toBe(first.revision);
      expect(await store.readStream(s)).toHaveLength(2);
    });

    it('appends to many streams at once, each at its own expected revision, and tells each outcome in order', async () => {
      const existing = stream('many-existing');
      await store.appendToStream(existing, [event()], 'no_stream');
      const news = Array.from({ length: 40 }, (_, i) => stream(`many-${i}`));
      const created = news.map((s) => ({ streamId: s, events: [event('Created', { s })], expected: 'no_stream' as const }));
      const outcomes = await store.appendToStreams([
        ...created.slice(0, 20),
        { streamId: existing, events: [event()], expected: 'no_stream' }, // refused: the stream exists
        { streamId: existing, events: [event(), event()], expected: 0 },
        ...created.slice(20),
      ]);
      expect(outcomes).toHaveLength(42);
      const refused = outcomes[20] as { error: unknown };
      expect(refused.error).toBeInstanceOf(WrongExpectedRevisionError);
      expect(outcomes[21]).toMatchObject({ result: { revision: 2 } });
      const results = [...outcomes.slice(0, 20), ...outcomes.slice(22)].map((o) => (o as { result: AppendResult }).result);
      expect(results.map((r) => r.revision)).toEqual(news.map(() => 0));
      for (const [i, s] of news.entries()) {
        const [read] = await store.readStream(s);
        expect(read).toMatchObject({ id: created[i].events[0].id, type: 'Created', data: { s }, revision: 0 });
        expect(comparePositions(read.position, results[i].position)).toBe(0);
      }
      expect(await store.readStream(existing)).toHaveLength(3);
      // A subscription hands them over as it does appendToStream's.
      const seen = await collect(START, 43, `contract${run}-many-`);
      expect(new Set(seen.map((e) => e.streamId))).toEqual(new Set([existing, ...news]));
    });

    it('answers appendToStreams retried with the same events as the first time, storing nothing twice', async () => {
      const appends = [stream('many-retry-a'), stream('many-retry-b')].map((s) => ({ streamId: s, events: [event()], expected: 'no_stream' as const }));
      const first = await store.appendToStreams(appends);
      const again = await store.appendToStreams(appends);
      expect(again.map((o) => ('result' in o ? o.result.revision : o.error))).toEqual(first.map((o) => ('result' in o ? o.result.revision : o.error)));
      for (const { streamId } of appends) expect(await store.readStream(streamId)).toHaveLength(1);
    });

    it('delivers every event in global order from a position, then follows new appends', async () => {
      const from = await store.headPosition();
      const s1 = stream('order1');
      const s2 = stream('order2');
      await store.appendToStream(s1, [event('One')], 'no_stream');
      await store.appendToStream(s2, [event('Two')], 'no_stream');
      await store.appendToStream(s1, [event('Three')], 0);
      const following = collect(from, 5);
      await new Promise((r) => setTimeout(r, 50));
      await store.appendToStream(s2, [event('Four'), event('Five')], 0);
      const seen = await following;
      expect(seen.map((e) => e.type)).toEqual(['One', 'Two', 'Three', 'Four', 'Five']);
      for (let i = 1; i < seen.length; i++) expect(comparePositions(seen[i - 1].position, seen[i].position)).toBe(-1);
    });

    it('starts after the given position', async () => {
      const s = stream('after');
      await store.appendToStream(s, [event('First')], 'no_stream');
      const middle = (await store.appendToStream(s, [event('Second')], 0)).position;
      await store.appendToStream(s, [event('Third')], 1);
      const seen = await collect(middle, 1, s);
      expect(seen.map((e) => e.type)).toEqual(['Third']);
    });

    it("finds this run's events from START, whatever else the store holds", async () => {
      const s = stream('from-start');
      await store.appendToStream(s, [event('Only')], 'no_stream');
      const seen = await collect(START, 1, s);
      expect(seen.map((e) => [e.streamId, e.type])).toEqual([[s, 'Only']]);
    });

    it('moves a filtered subscriber past events of other streams', async () => {
      const mine = stream('quiet-');
      const from = await store.headPosition();
      // More foreign events than a server-side filter scans between two checkpoints (EventStoreDB: 32).
      const foreign = Array.from({ length: 80 }, () => event('Foreign'));
      await store.appendToStream(stream('noisy'), foreign, 'no_stream');
      const [firstForeign] = await store.readStream(stream('noisy'));
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), 10_000);
      let moved = false;
      for await (const batch of store.subscribeToAll(from, { signal: abort.signal, streamPrefixes: [mine] })) {
        expect(batch.events).toEqual([]);
        if (comparePositions(batch.position, firstForeign.position) >= 0) {
          moved = true;
          break;
        }
      }
      clearTimeout(timer);
      abort.abort();
      expect(moved).toBe(true);
    });

    it('appends with "any" to a stream that does not exist', async () => {
      await expect(store.appendToStream(stream('any-new'), [event()], 'any')).resolves.toMatchObject({ revision: 0 });
    });

    it('keeps unicode and nested JSON intact', async () => {
      const data = { name: 'Zoë 東京 🚀', list: [1, 'two', { three: null }], deep: { a: { b: { c: true } } } };
      await store.appendToStream(stream('json'), [event('Json', data)], 'no_stream');
      expect((await store.readStream(stream('json')))[0].data).toEqual(data);
    });

    it('reports the head position', async () => {
      const written = await store.appendToStream(stream('head'), [event()], 'no_stream');
      expect(comparePositions(await store.headPosition(), written.position)).toBeGreaterThanOrEqual(0);
    });

    it('ends a subscription when its signal aborts', async () => {
      const abort = new AbortController();
      const iterator = store.subscribeToAll(await store.headPosition(), { signal: abort.signal })[Symbol.asyncIterator]();
      const next = iterator.next();
      setTimeout(() => abort.abort(), 20);
      await expect(next).resolves.toMatchObject({ done: true });
    });
  });
}
