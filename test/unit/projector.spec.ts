import { UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { RECORD_KINDS } from '../../src/read-models';
import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { customerProjection } from '../../src/customers/customer.projection';
import { profileProjection } from '../../src/profiles/profile.projection';
import { comparePositions, NewEvent, Position, START } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { foldBatch } from '../../src/projections/fold-batch';
import type { Projection } from '../../src/projections/projection';
import { CATCH_UP_BATCH, LIVE_BATCH, Projector } from '../../src/projections/projector';
import { rebuildProjections } from '../../src/projections/rebuild';
import { GenerationReplacedError } from '../../src/read-store/read-store.port';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import type { SqliteDatabase } from '../../src/storage/sqlite-database';
import { openTempSqlite } from '../support/temp-sqlite';

const LEASE = { holder: 'unit', ttlMs: 60_000 };
/** The projector's wait before it folds again after a store failed it: a second in the service. */
const RETRY_MS = 50;
const meta = { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 };
const ev = (type: string, data: Record<string, unknown> = {}): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

describe('Projector', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  let db: SqliteDatabase;
  let events: SqliteEventStore;
  let reads: SqliteReadStore;
  const running: Projector[] = [];

  beforeEach(() => {
    sqlite = openTempSqlite();
    db = sqlite.db;
    events = new SqliteEventStore(db, 20);
    reads = new SqliteReadStore(db);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((p) => p.stop()));
    await events.close();
    sqlite.dispose();
  });

  /** The read store, but for the calls given, which answer their own way. */
  const standIn = (calls: Partial<SqliteReadStore>): SqliteReadStore => Object.assign(Object.create(reads) as SqliteReadStore, calls);

  /** A projector on the read store, or on a stand-in for it that answers some calls its own way. */
  async function startProjector(readStore: SqliteReadStore = reads, poisonEvents: 'park' | 'stop' = 'park'): Promise<Projector> {
    const p = new Projector(customerProjection, new UpcastingEventStore(events, RECORD_KINDS), readStore, LEASE, RETRY_MS, undefined, poisonEvents);
    running.push(p);
    await p.start();
    return p;
  }

  async function createCustomer(fields: Record<string, string>): Promise<{ id: string; position: Position }> {
    const id = randomUUID();
    const { position } = await events.appendToStream(`customer-${id}`, [ev('CustomerCreated', fields)], 'no_stream');
    return { id, position };
  }

  const get = (id: string) => reads.get('customers', 'acc', id);

  it('folds events into documents and saves its checkpoint with them', async () => {
    const p = await startProjector();
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    const { position } = await events.appendToStream(`customer-${a.id}`, [ev('CustomerUpdated', { name: 'Ada L.' })], 0);
    await events.appendToStream('profile_slug-other', [ev('SlugReserved', { slug: 'x' })], 'no_stream');
    await p.waitFor(position, 2000);
    expect(await get(a.id)).toMatchObject({ revision: 1, fields: { name: 'Ada L.', email: 'ada@x.io' } });
    const saved = (await reads.status('customers')).live.position;
    expect(comparePositions(saved!, position)).toBeGreaterThanOrEqual(0);
  });

  it('resumes from its checkpoint: a restart applies only what came after', async () => {
    const first = await startProjector();
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    await first.waitFor(a.position, 2000);
    await first.stop();
    const { position } = await events.appendToStream(`customer-${a.id}`, [ev('CustomerDeleted')], 0);
    const second = await startProjector();
    expect(second.checkpoint).toEqual(a.position);
    await second.waitFor(position, 2000);
    expect(await get(a.id)).toBeNull();
    expect((await reads.getMany('customers', [a.id])).get(a.id)).toMatchObject({ deleted: true, revision: 1 });
  });

  it('changes nothing when every event is applied a second time', async () => {
    const first = await startProjector();
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    await events.appendToStream(`customer-${a.id}`, [ev('CustomerUpdated', { name: 'B' }), ev('CustomerUpdated', { name: 'C' })], 0);
    const { position } = await events.appendToStream(`customer-${a.id}`, [ev('CustomerDeleted')], 2);
    await first.waitFor(position, 2000);
    await first.stop();
    const before = await reads.getMany('customers', [a.id]);
    // As if the checkpoint had been lost: replay all.
    db.prepare('UPDATE read_model_generations SET commit_pos = NULL, prepare_pos = NULL').run();
    const replay = await startProjector();
    await replay.waitFor(position, 2000);
    expect(await reads.getMany('customers', [a.id])).toEqual(before);
  });

  it('keeps a stored document that is further than a replayed batch starting its stream', async () => {
    const first = await startProjector();
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    const { position } = await events.appendToStream(`customer-${a.id}`, [ev('CustomerDeleted')], 0);
    await first.waitFor(position, 2000);
    await first.stop();
    const before = await reads.getMany('customers', [a.id]);
    // Only the creation again: folded from scratch (no lookup), it must not revive the record.
    const [created] = await new UpcastingEventStore(events, RECORD_KINDS).readStream(`customer-${a.id}`);
    await foldBatch(customerProjection, reads, 1, { events: [created], position: created.position }, START);
    expect(await reads.getMany('customers', [a.id])).toEqual(before);
    expect(before.get(a.id)).toMatchObject({ deleted: true, revision: 1 });
  });

  it('stops on an event it cannot fold when told to (POISON_EVENTS=stop), naming its stream and revision', async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const p = await startProjector(reads, 'stop');
    const id = randomUUID();
    const { position } = await events.appendToStream(`customer-${id}`, [ev('CustomerUpdated', { name: 'no creation first' })], 'no_stream');
    await expect(p.waitFor(position, 2000)).rejects.toThrow(`customer-${id}@0`);
    expect(p.state).toBe('failed');
    expect(logged.mock.calls.flat().join(' ')).toContain(`customer-${id}@0`);
    logged.mockRestore();
    // Kept with the checkpoint, for the CLI's status in another process.
    expect((await reads.status('customers')).live.failure).toEqual({
      streamId: `customer-${id}`,
      revision: 0,
      error: `CustomerUpdated before CustomerCreated in customer-${id}`,
    });
  });

  describe('an event it cannot fold, parked (POISON_EVENTS=park, the default)', () => {
    /** The customers' read model, but for updates naming "poison", which it cannot fold while `broken`. */
    let broken = true;
    const flaky: Projection = {
      ...customerProjection,
      evolve: (document, event) => {
        if (broken && event.type === 'CustomerUpdated' && event.data.name === 'poison') throw new Error('cannot fold a poison name');
        return customerProjection.evolve(document, event);
      },
    };
    let warned: jest.SpyInstance;
    /** The events as the service reads them: in their types' current shapes. */
    const upcasting = () => new UpcastingEventStore(events, RECORD_KINDS);
    beforeEach(() => {
      broken = true;
      warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    });
    afterEach(() => warned.mockRestore());

    async function startFlaky(): Promise<Projector> {
      const p = new Projector(flaky, upcasting(), reads, LEASE, RETRY_MS);
      running.push(p);
      await p.start();
      return p;
    }

    /** A customer whose second event cannot be folded, and a third event behind it. */
    async function poisoned(): Promise<{ stream: string; position: Position }> {
      const { id } = await createCustomer({ name: 'Ada' });
      const stream = `customer-${id}`;
      await events.appendToStream(stream, [ev('CustomerUpdated', { name: 'poison' })], 0);
      const { position } = await events.appendToStream(stream, [ev('CustomerUpdated', { email: 'later@x.io' })], 1);
      return { stream, position };
    }

    async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
      for (let tries = 0; tries < 500; tries++) {
        const value = await read();
        if (done(value)) return value;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('the condition was never met');
    }

    it('parks the stream at that event with every later one, and goes on with every other stream', async () => {
      const p = await startFlaky();
      const { stream, position } = await poisoned();
      const other = await createCustomer({ name: 'Bea' });
      await p.waitFor(other.position, 2000);
      await p.waitFor(position, 2000);
      expect(p.state).toBe('running');
      expect(await get(other.id)).toMatchObject({ fields: { name: 'Bea' } });
      // Folded up to the event before the poison one, nothing after it.
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 0, fields: { name: 'Ada' } });
      const [parked] = await reads.parked('customers', 1);
      expect(parked).toMatchObject({ streamId: stream, first: { revision: 1, type: 'CustomerUpdated', error: 'cannot fold a poison name' }, waiting: 1 });
      const later = await events.appendToStream(stream, [ev('CustomerUpdated', { email: 'even-later@x.io' })], 2);
      await p.waitFor(later.position, 2000);
      expect((await reads.parked('customers', 1))[0].waiting).toBe(2);
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 0 });
      const told = warned.mock.calls.flat().filter((line) => String(line).includes(`${stream}@1`));
      expect(told).toHaveLength(1);
    });

    it('keeps the parked streams over a restart: their later events still wait', async () => {
      const first = await startFlaky();
      const { stream, position } = await poisoned();
      await first.waitFor(position, 2000);
      await first.stop();
      const later = await events.appendToStream(stream, [ev('CustomerUpdated', { email: 'after-restart@x.io' })], 2);
      const second = await startFlaky();
      await second.waitFor(later.position, 2000);
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 0 });
      expect((await reads.parked('customers', 1))[0]).toMatchObject({ first: { revision: 1 }, waiting: 2 });
    });

    it('folds the parked events again on a retry once they can be, and unparks the stream', async () => {
      const p = await startFlaky();
      const { stream, position } = await poisoned();
      await p.waitFor(position, 2000);
      await reads.requestParked('customers', 1, [stream], { action: 'retry', by: 'ops', at: Date.now(), reason: null });
      // Still broken: parked where it was, the request done.
      await until(
        () => reads.parked('customers', 1),
        (parked) => parked[0]?.request === null,
      );
      expect((await reads.parked('customers', 1))[0]).toMatchObject({ first: { revision: 1 }, waiting: 1 });
      broken = false;
      await reads.requestParked('customers', 1, 'all', { action: 'retry', by: 'ops', at: Date.now(), reason: null });
      await until(
        () => reads.parked('customers', 1),
        (parked) => parked.length === 0,
      );
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 2, fields: { name: 'poison', email: 'later@x.io' } });
      const after = await events.appendToStream(stream, [ev('CustomerUpdated', { name: 'Ada again' })], 2);
      await p.waitFor(after.position, 2000);
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 3, fields: { name: 'Ada again' } });
    });

    it('drops the first parked event for good on a skip, recorded with who, when and why, and folds the rest', async () => {
      const p = await startFlaky();
      const { stream, position } = await poisoned();
      await p.waitFor(position, 2000);
      await reads.requestParked('customers', 1, [stream], { action: 'skip', by: 'ops', at: Date.now(), reason: 'a bad import' });
      await until(
        () => reads.parked('customers', 1),
        (parked) => parked.length === 0,
      );
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 2, fields: { name: 'Ada', email: 'later@x.io' } });
      expect(await reads.skipped('customers')).toEqual([
        expect.objectContaining({
          generation: 1,
          streamId: stream,
          revision: 1,
          type: 'CustomerUpdated',
          by: 'ops',
          reason: 'a bad import',
          error: 'cannot fold a poison name',
        }),
      ]);
    });

    it('parks it once, with its error, when the commit that parked it failed and the batch is folded again', async () => {
      let failNext = 1;
      const failing = standIn({
        commit: async (collection, documents, checkpoint, parked) => {
          if (parked?.parked?.length && failNext > 0 && failNext--) throw new StoreUnavailableError('SQLite', 'busy');
          return reads.commit(collection, documents, checkpoint, parked);
        },
      });
      const p = new Projector(flaky, upcasting(), failing, LEASE, RETRY_MS);
      running.push(p);
      await p.start();
      const { stream, position } = await poisoned();
      await p.waitFor(position, 5000);
      expect(failNext).toBe(0);
      expect(await reads.parked('customers', 1)).toEqual([
        expect.objectContaining({ streamId: stream, first: expect.objectContaining({ revision: 1, error: 'cannot fold a poison name' }), waiting: 1 }),
      ]);
      expect(await get(stream.slice('customer-'.length))).toMatchObject({ revision: 0 });
      expect(warned.mock.calls.flat().filter((line) => String(line).startsWith(`Parked ${stream}@1`))).toHaveLength(1);
    });

    it('stops on it instead when told to (POISON_EVENTS=stop), parking nothing', async () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const p = new Projector(flaky, upcasting(), reads, LEASE, RETRY_MS, undefined, 'stop');
      running.push(p);
      await p.start();
      const { stream, position } = await poisoned();
      await expect(p.waitFor(position, 2000)).rejects.toThrow(`${stream}@1`);
      logged.mockRestore();
      expect(p.state).toBe('failed');
      await expect(reads.parked('customers', 1)).resolves.toEqual([]);
    });

    it('stops a rebuild on it unless the rebuild parks (--park): then the new generation holds the parked stream', async () => {
      const { stream } = await poisoned();
      const other = await createCustomer({ name: 'Bea' });
      const options = { signal: new AbortController().signal, graceMs: 0 };
      await expect(rebuildProjections([flaky], upcasting(), reads, options)).rejects.toThrow(`cannot apply ${stream}@1`);
      expect((await reads.status('customers')).live.generation).toBe(1);
      const parkedBy: string[] = [];
      const [result] = await rebuildProjections([flaky], upcasting(), reads, { ...options, park: true, onParked: (_p, s, r) => parkedBy.push(`${s}@${r}`) });
      expect((await reads.status('customers')).live.generation).toBe(result.generation);
      expect(parkedBy).toEqual([`${stream}@1`]);
      expect(await reads.parked('customers', result.generation)).toEqual([expect.objectContaining({ streamId: stream, waiting: 1 })]);
      expect(await get(other.id)).toMatchObject({ fields: { name: 'Bea' } });
    });
  });

  it('folds again from the stored checkpoint after a read store error, so commits the store lost are not skipped', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    // A read store that acknowledges the first commit without keeping it (a server that crashed
    // after answering), then fails the next one as unreachable (the server restarting).
    let commits = 0;
    const forgetful = standIn({
      commit: async (...args) => {
        commits += 1;
        if (commits === 1) return;
        if (commits === 2) throw new StoreUnavailableError('MongoDB', 'connection reset');
        return reads.commit(...args);
      },
    });
    const p = await startProjector(forgetful);
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    await p.waitFor(a.position, 5000);
    const b = await createCustomer({ name: 'Bob', email: 'bob@x.io' });
    await p.waitFor(b.position, 10_000);
    expect(commits).toBeGreaterThanOrEqual(3);
    expect(await get(a.id)).toMatchObject({ fields: { name: 'Ada' } });
    expect(await get(b.id)).toMatchObject({ fields: { name: 'Bob' } });
    warned.mockRestore();
  });

  it('folds a document it wrote without reading it again, until a failure or another generation', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const asked: string[] = [];
    let failNext = false;
    const watched = standIn({
      getMany: async (collection, ids, generation) => {
        asked.push(...ids);
        return reads.getMany(collection, ids, generation);
      },
      commit: async (...args) => {
        if (!failNext) return reads.commit(...args);
        failNext = false;
        throw new StoreUnavailableError('MongoDB', 'connection reset');
      },
    });
    const p = await startProjector(watched);
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    let revision = 0;
    const rename = async (name: string) => {
      const { position } = await events.appendToStream(`customer-${a.id}`, [ev('CustomerUpdated', { name })], revision++);
      await p.waitFor(position, 5000);
    };
    await p.waitFor(a.position, 2000);
    await rename('Ada L.');
    await rename('Ada Lovelace');
    expect(asked).toEqual([]);
    expect(await get(a.id)).toMatchObject({ revision: 2, fields: { name: 'Ada Lovelace', email: 'ada@x.io' } });

    failNext = true; // refolded from the stored checkpoint after RETRY_MS
    await rename('Ada King');
    expect(asked).toEqual([a.id]);
    expect(await get(a.id)).toMatchObject({ revision: 3, fields: { name: 'Ada King', email: 'ada@x.io' } });

    await rebuildProjections([customerProjection], new UpcastingEventStore(events, RECORD_KINDS), reads, { signal: new AbortController().signal, graceMs: 0 });
    await rename('Ada, Countess of Lovelace');
    expect(asked).toEqual([a.id, a.id]);
    expect((await reads.status('customers')).live.generation).toBe(2);
    expect(await get(a.id)).toMatchObject({ revision: 4, fields: { name: 'Ada, Countess of Lovelace', email: 'ada@x.io' } });
    warned.mockRestore();
    logged.mockRestore();
  });

  it('catches up in batches of CATCH_UP_BATCH, then folds a backlog in batches of LIVE_BATCH, which hold the event loop less', async () => {
    const folded: number[] = [];
    const watched = standIn({
      commit: async (collection, documents, checkpoint) => {
        folded.push(documents.length);
        return reads.commit(collection, documents, checkpoint);
      },
    });
    // Asked for together, the appends are committed as one group: the projector finds them all at once.
    const burst = async (count: number) => {
      const created = await Promise.all(Array.from({ length: count }, (_, i) => createCustomer({ name: `c${i}`, email: `c${i}@x.io` })));
      return created[created.length - 1].position;
    };
    const head = await burst(CATCH_UP_BATCH + 100);
    const p = new Projector(customerProjection, new UpcastingEventStore(events, RECORD_KINDS), watched, LEASE, RETRY_MS);
    running.push(p);
    p.catchUpTo(head); // as the service does at its start
    await p.start();
    await p.waitFor(head, 30_000);
    expect(Math.max(...folded)).toBe(CATCH_UP_BATCH);

    folded.length = 0;
    const later = await burst(LIVE_BATCH * 3); // a burst once caught up (another worker's, say)
    await p.waitFor(later, 30_000);
    expect(Math.max(...folded)).toBe(LIVE_BATCH);
    expect(folded.reduce((sum, n) => sum + n, 0)).toBe(LIVE_BATCH * 3);
  });

  describe("batches with nothing for its read model (another model's events)", () => {
    /** Commits to the read store, counted: each one's documents. */
    const commits: number[] = [];
    let failNext = 0;
    const counted = () =>
      standIn({
        commit: async (collection, documents, checkpoint) => {
          if (failNext > 0 && failNext--) throw new StoreUnavailableError('SQLite', 'busy');
          commits.push(documents.length);
          return reads.commit(collection, documents, checkpoint);
        },
      });
    const stored = () => reads.status('customers').then((s) => s.live.position!);
    const slugEvent = async (slug: string) => (await events.appendToStream(`profile_slug-${slug}`, [ev('SlugReserved', { slug })], 'no_stream')).position;
    async function storedReaches(position: Position, withinMs = 5000): Promise<boolean> {
      for (let waited = 0; waited < withinMs; waited += 20) {
        if (comparePositions(await stored(), position) >= 0) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      return false;
    }
    async function started(everyMs: number, poisonEvents: 'park' | 'stop' = 'park'): Promise<Projector> {
      commits.length = 0;
      failNext = 0;
      const p = new Projector(customerProjection, new UpcastingEventStore(events, RECORD_KINDS), counted(), LEASE, RETRY_MS, everyMs, poisonEvents);
      running.push(p);
      await p.start();
      const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
      await p.waitFor(a.position, 2000);
      commits.length = 0;
      return p;
    }

    it('move its checkpoint in memory at once, and in the store once in a while, not once a batch', async () => {
      const p = await started(300);
      let last = START;
      for (let i = 0; i < 20; i++) {
        last = await slugEvent(`s${i}`);
        await p.waitFor(last, 2000); // each its own batch
      }
      expect(p.checkpoint).toEqual(last);
      expect(await storedReaches(last)).toBe(true);
      // At most once per 300 ms (the 20 appends may take longer than that on a slow machine), and nothing but the checkpoint.
      expect(commits.length).toBeGreaterThanOrEqual(1);
      expect(commits.length).toBeLessThan(20);
      expect(commits.every((documents) => documents === 0)).toBe(true);
      // A write of its own is stored with its batch, at once.
      const b = await createCustomer({ name: 'Bea', email: 'bea@x.io' });
      await p.waitFor(b.position, 2000);
      expect(await stored()).toEqual(b.position);
    });

    it('are stored as it stops', async () => {
      const p = await started(60_000);
      const last = await slugEvent('last');
      await p.waitFor(last, 2000);
      expect(comparePositions(await stored(), last)).toBeLessThan(0);
      await p.stop();
      expect(await stored()).toEqual(last);
    });

    it('are stored again after the store failed the save', async () => {
      const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const p = await started(100);
      await slugEvent('first'); // saved with its batch: the last save was long before
      const last = await slugEvent('second');
      await p.waitFor(last, 2000);
      failNext = 1; // the timer's save
      expect(await storedReaches(last)).toBe(true);
      expect(warned.mock.calls.flat().join(' ')).toContain('Could not save the checkpoint: ');
      warned.mockRestore();
    });

    it('never clear the failure of a poison event that follows them', async () => {
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const p = await started(300, 'stop');
      await slugEvent('before-poison');
      const id = randomUUID();
      const { position } = await events.appendToStream(`customer-${id}`, [ev('CustomerUpdated', { name: 'no creation first' })], 'no_stream');
      await expect(p.waitFor(position, 2000)).rejects.toThrow(`customer-${id}@0`);
      logged.mockRestore();
      // Past the moment a save of the checkpoint was due, and after the stop.
      await new Promise((r) => setTimeout(r, 600));
      await p.stop();
      expect((await reads.status('customers')).live.failure).toMatchObject({ streamId: `customer-${id}`, revision: 0 });
    });
  });

  it('lets a wait time out when the read model does not get there', async () => {
    const p = await startProjector();
    const far = { commit: 10_000n, prepare: 10_000n };
    await expect(p.waitFor(far, 50)).rejects.toThrow(/did not reach/);
  });

  it('answers a write that a rebuild folded before it replaced the generation, with no event after it', async () => {
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    // The projector reads the write, but before it commits, a rebuild folds the same write into a
    // new generation and promotes it: the projector's commit is refused, and the new generation's
    // checkpoint is already past the write.
    let rebuilt: Promise<unknown> | undefined;
    const raced = standIn({
      commit: async (...args) => {
        rebuilt ??= rebuildProjections([customerProjection], new UpcastingEventStore(events, RECORD_KINDS), reads, {
          signal: new AbortController().signal,
          graceMs: 0,
        });
        await rebuilt;
        return reads.commit(...args);
      },
    });
    const p = await startProjector(raced);
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    await p.waitFor(a.position, 2000);
    expect(await get(a.id)).toMatchObject({ fields: { name: 'Ada' } });
    expect((await reads.status('customers')).live.generation).toBe(2); // the rebuild's, promoted under the projector
    logged.mockRestore();
  });

  describe('a rebuild that does not finish', () => {
    beforeEach(async () => {
      await reads.ensureCollection(customerProjection.schema);
      await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    });

    it('drops what it built when it is stopped, leaving the live read model as it was', async () => {
      const stop = new AbortController();
      const rebuilt = rebuildProjections([customerProjection], new UpcastingEventStore(events, RECORD_KINDS), reads, {
        signal: stop.signal,
        graceMs: 0,
        onProgress: () => stop.abort(),
      });
      await expect(rebuilt).rejects.toThrow(/Rebuild interrupted/);
      expect(await reads.status('customers')).toMatchObject({ live: { generation: 1 }, building: null });
      expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'customers__g2'").get()).toEqual({ n: 0 });
    });

    it('drops what it built when a write fails, and tells why', async () => {
      const failing = standIn({
        commit: async () => {
          throw new StoreUnavailableError('SQLite', 'disk I/O error');
        },
      });
      const rebuilt = rebuildProjections([customerProjection], new UpcastingEventStore(events, RECORD_KINDS), failing, {
        signal: new AbortController().signal,
        graceMs: 0,
      });
      await expect(rebuilt).rejects.toThrow(/disk I\/O error/);
      expect((await reads.status('customers')).building).toBeNull();
    });

    it('drops what it started when it cannot start the next read model', async () => {
      const failing = standIn({
        startRebuild: async (collection) => {
          if (collection === 'profiles') throw new StoreUnavailableError('MongoDB', 'connection reset');
          return reads.startRebuild(collection);
        },
      });
      const rebuilt = rebuildProjections([customerProjection, profileProjection], new UpcastingEventStore(events, RECORD_KINDS), failing, {
        signal: new AbortController().signal,
        graceMs: 0,
      });
      await expect(rebuilt).rejects.toThrow(/connection reset/);
      expect((await reads.status('customers')).building).toBeNull();
    });
  });

  it('goes on when the read store cannot say which generation replaced its own', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    // The first commit is refused as if a rebuild had replaced the generation, and the next look at
    // the generations fails (the store unreachable for a moment).
    let refused = false;
    let statusFails = false;
    const flaky = standIn({
      commit: async (...args) => {
        if (!refused) {
          refused = statusFails = true;
          throw new GenerationReplacedError('customers', args[2].generation);
        }
        return reads.commit(...args);
      },
      status: async (collection) => {
        if (statusFails) {
          statusFails = false;
          throw new StoreUnavailableError('MongoDB', 'connection reset');
        }
        return reads.status(collection);
      },
    });
    const p = await startProjector(flaky);
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    await p.waitFor(a.position, 5000);
    expect(await get(a.id)).toMatchObject({ fields: { name: 'Ada' } });
    expect(p.state).toBe('running');
    warned.mockRestore();
  });

  it('waits before folding again when the store still names the replaced generation live (its reads lag the fence)', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    // Commits are refused as replaced while status still says generation 1, as a MongoDB majority
    // read does until the swap that the commit's conditional update already saw reaches a majority.
    let lagging = true;
    const refusals: number[] = [];
    const lagged = standIn({
      commit: async (...args) => {
        if (lagging) {
          refusals.push(performance.now());
          // Folding again at once never lets the clock's timers run: the 50th refusal ends the lag.
          if (refusals.length >= 50) lagging = false;
          throw new GenerationReplacedError('customers', args[2].generation);
        }
        return reads.commit(...args);
      },
    });
    const p = await startProjector(lagged);
    const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
    while (refusals.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
    lagging = false;
    // Each fold a retry delay after the refusal before it (timers round to the millisecond), not one after the other.
    const gaps = refusals.slice(1).map((at, n) => at - refusals[n]);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(RETRY_MS - 1);
    await p.waitFor(a.position, 5000);
    expect(await get(a.id)).toMatchObject({ fields: { name: 'Ada' } });
    warned.mockRestore();
  });

  describe('beside another instance on the same read store', () => {
    /**
     * Long enough that no lease runs out while the test process stalls (other suites share the
     * machine's two cores), unless a test lets it: renewals come every third of it.
     */
    const LEASE = 30_000;
    /**
     * For the test that hands the lease over: followers try for it every third of this, and a
     * holder notices it is cut off at its next renewal, as often. Three stalled seconds away from
     * being lost by mistake.
     */
    const SHORT_LEASE = 3000;

    /** The read store as one instance sees it; `cut()` makes every later call fail, as for a holder cut off from the store. */
    function instanceStore() {
      let cutOff = false;
      const commits: number[] = [];
      const store = new Proxy(reads, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (cutOff) return Promise.reject(new StoreUnavailableError('MongoDB', 'cut off'));
            if (name === 'commit') commits.push(Date.now());
            return value.apply(target, args);
          };
        },
      });
      return { store, commits, cut: () => (cutOff = true) };
    }

    async function startAs(holder: string, store: SqliteReadStore, ttlMs = LEASE): Promise<Projector> {
      const p = new Projector(customerProjection, new UpcastingEventStore(events, RECORD_KINDS), store, { holder, ttlMs });
      running.push(p);
      await p.start();
      return p;
    }

    it('lets exactly one fold; the other commits nothing and still sees every write through the stored checkpoint', async () => {
      const one = instanceStore();
      const two = instanceStore();
      const first = await startAs('one', one.store);
      const second = await startAs('two', two.store);
      await new Promise((r) => setTimeout(r, 100));
      expect([first.folding, second.folding]).toEqual([true, false]);
      for (let n = 0; n < 5; n++) {
        const a = await createCustomer({ name: `Ada ${n}`, email: `ada${n}@x.io` });
        await second.waitFor(a.position, 5000);
        expect(await get(a.id)).toMatchObject({ fields: { name: `Ada ${n}` } });
      }
      expect(one.commits.length).toBeGreaterThan(0);
      expect(two.commits).toEqual([]);
    });

    it('hands the lease over when the holder stops, and after it expires when the holder is cut off', async () => {
      const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const one = instanceStore();
      const two = instanceStore();
      const three = instanceStore();
      const first = await startAs('one', one.store, SHORT_LEASE);
      const second = await startAs('two', two.store, SHORT_LEASE);
      const third = await startAs('three', three.store, SHORT_LEASE);
      await new Promise((r) => setTimeout(r, 100));
      expect(first.folding).toBe(true);

      await first.stop(); // gives the lease up
      const a = await createCustomer({ name: 'Ada', email: 'ada@x.io' });
      await third.waitFor(a.position, 5000);
      expect([second.folding, third.folding].filter(Boolean)).toHaveLength(1);

      const [holder, holderStore, other] = second.folding ? [second, two, third] : [third, three, second];
      holderStore.cut(); // neither renews nor gives up its lease: it runs out
      const b = await createCustomer({ name: 'Bob', email: 'bob@x.io' });
      while (holder.folding) await new Promise((r) => setTimeout(r, 10)); // its next renewal fails
      // The lease's time to live passes on the clock the read store compares, rather than waited out.
      const now = Date.now;
      const later = jest.spyOn(Date, 'now').mockImplementation(() => now() + SHORT_LEASE);
      await other.waitFor(b.position, 20_000);
      expect(other.folding).toBe(true);
      expect(holder.folding).toBe(false);
      expect(await get(b.id)).toMatchObject({ fields: { name: 'Bob' } });
      later.mockRestore();
      warned.mockRestore();
    });
  });
});
