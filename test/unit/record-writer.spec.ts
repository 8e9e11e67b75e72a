import { UpcastingEventStore } from '../../src/event-store/upcasting-event-store';
import { randomUUID } from 'node:crypto';
import { CUSTOMER, decideCreateCustomer, decideDeleteCustomer, decideUpdateCustomer } from '../../src/customers/customer.decider';
import type { DataKeys } from '../../src/sealing/data-keys';
import type { Position } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import type { ProjectionsService } from '../../src/projections/projections.service';
import { snapshotStreamOf } from '../../src/sealing/sealed-event-store';
import { RecordSnapshots, SNAPSHOT_EVERY } from '../../src/records/record-snapshots';
import { RecordWriter } from '../../src/records/record-writer';
import type { Clock } from '../../src/records/handle-command';
import { openTempSqlite } from '../support/temp-sqlite';

/** The read models are not this test's subject: a write here need not wait for them. */
const noReadModels = { waitFor: async (_streamId: string, _position: Position) => undefined } as unknown as ProjectionsService;
/** Events in plain here: no record has a data key, destroyed or not. */
const unsealed = { current: async () => undefined } as unknown as DataKeys;
const context = { accountId: 'acc', requestId: 'req' };

describe('RecordWriter', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  let events: SqliteEventStore;

  beforeEach(() => {
    sqlite = openTempSqlite();
    events = new SqliteEventStore(sqlite.db);
  });
  afterEach(async () => {
    await events.close();
    sqlite.dispose();
  });

  const writerOf = (keepAtMost?: number, clock?: Clock) =>
    new RecordWriter(CUSTOMER, new UpcastingEventStore(events, [CUSTOMER]), noReadModels, unsealed, { keepAtMost, clock });
  const create = (writer: RecordWriter, id: string, name = 'Ada') =>
    writer.write(id, context, randomUUID(), (state) => decideCreateCustomer(state, { name, email: 'ada@example.com' }), { isNew: true });
  const update = (writer: RecordWriter, id: string, fields: Record<string, string>) =>
    writer.write(id, context, randomUUID(), (state) => decideUpdateCustomer(state, 'acc', fields));
  it('decides on what other writers appended since it kept the record', async () => {
    const id = randomUUID();
    const here = writerOf();
    const elsewhere = writerOf(); // another process, say
    await create(here, id);
    await update(here, id, { name: 'Ada L' });
    await update(elsewhere, id, { company: 'Analytical Engines' });

    const written = await update(here, id, { mobile: '+44 20 7946 0000' });
    expect(written.appended?.revision).toBe(3); // no conflict: it read the other writer's event first
    const { state, revision } = await here.load(id);
    expect(revision).toBe(3);
    expect(state?.fields).toEqual({ name: 'Ada L', email: 'ada@example.com', company: 'Analytical Engines', mobile: '+44 20 7946 0000' });
    expect(written.record).toEqual((await writerOf().load(id)).state); // what the write answers from
    expect(await writerOf().load(id)).toEqual(await here.load(id)); // the same as a fold of the whole stream
  });

  it('takes a snapshot with the write that ends each block of SNAPSHOT_EVERY events, the fold at its revision', async () => {
    const id = randomUUID();
    const writer = writerOf();
    await create(writer, id);
    for (let n = 1; n < 2 * SNAPSHOT_EVERY + 10; n++) await update(writer, id, { name: `Ada ${n}` });
    const snapshots = await events.readStream(snapshotStreamOf(`customer-${id}`));
    expect(snapshots.map((s) => [s.revision, s.data])).toEqual([
      [0, { name: `Ada ${SNAPSHOT_EVERY - 1}`, email: 'ada@example.com' }],
      [1, { name: `Ada ${2 * SNAPSHOT_EVERY - 1}`, email: 'ada@example.com' }],
    ]);
  });

  it('leaves a block after a missing one to the reads that fill them in order (a record older than snapshots)', async () => {
    const id = randomUUID();
    const writer = writerOf();
    await create(writer, id);
    // Its first block written by another writer that took no snapshot.
    const before = jest.spyOn(RecordSnapshots.prototype, 'afterWrite').mockResolvedValue(undefined);
    for (let n = 1; n < SNAPSHOT_EVERY; n++) await update(writer, id, { name: `Ada ${n}` });
    before.mockRestore();
    for (let n = SNAPSHOT_EVERY; n < 2 * SNAPSHOT_EVERY; n++) await update(writer, id, { name: `Ada ${n}` });
    expect(await events.readStream(snapshotStreamOf(`customer-${id}`))).toEqual([]);
    expect((await writer.load(id)).revision).toBe(2 * SNAPSHOT_EVERY - 1);
  });

  it('updates a record it kept without reading its stream: the expected revision is the check', async () => {
    const id = randomUUID();
    const writer = writerOf();
    await create(writer, id); // keeps the record as it wrote it
    const reads = jest.spyOn(events, 'readStream');

    for (let n = 1; n <= 20; n++) await update(writer, id, { name: `Ada ${n}` });
    expect(reads).not.toHaveBeenCalled();
    expect(await writer.load(id)).toEqual(await writerOf().load(id)); // the same as a fold of the whole stream
    expect((await writer.load(id)).revision).toBe(20);
  });

  it('decides again on the stream as read when a decision on the record it kept refuses or changes nothing', async () => {
    const id = randomUUID();
    const here = writerOf();
    const elsewhere = writerOf();
    await create(here, id);
    await update(here, id, { name: 'Ada' }); // kept at revision 0: no change, nothing appended
    await update(elsewhere, id, { name: 'Grace' });

    // On the kept record the name is already Ada: nothing to do. On the stream it is Grace.
    const written = await update(here, id, { name: 'Ada' });
    expect(written.appended?.revision).toBe(2);
    expect((await writerOf().load(id)).state?.fields.name).toBe('Ada');

    await remove(elsewhere, id);
    // Deleted elsewhere: the kept record says it exists, the stream that it does not.
    await expect(update(here, id, { name: 'Ada L' })).rejects.toMatchObject({ reason: 'not_found' });
  });

  it('takes writes to one record asked for at once in turn: none is refused and decided again', async () => {
    const id = randomUUID();
    const writer = writerOf();
    await create(writer, id);
    await update(writer, id, { name: 'Ada 0' });
    const appends = jest.spyOn(events, 'appendToStream');
    const reads = jest.spyOn(events, 'readStream');

    const written = await Promise.all([1, 2, 3, 4, 5].map((n) => update(writer, id, { name: `Ada ${n}` })));
    expect(written.map((w) => w.appended?.revision)).toEqual([2, 3, 4, 5, 6]); // in the order asked
    expect(appends).toHaveBeenCalledTimes(5); // one append each: no refusal
    expect(reads).not.toHaveBeenCalled();
    expect((await writerOf().load(id)).state?.fields.name).toBe('Ada 5');
  });

  it('goes on with the next write to a record when one before it fails', async () => {
    const id = randomUUID();
    const writer = writerOf();
    await create(writer, id);
    const failing = writer.write(id, context, randomUUID(), () => {
      throw new Error('decided badly');
    });
    const next = update(writer, id, { name: 'Ada L' });
    await expect(failing).rejects.toThrow('decided badly');
    expect((await next).appended?.revision).toBe(1);
  });

  const remove = (writer: RecordWriter, id: string) => writer.write(id, context, randomUUID(), (state) => decideDeleteCustomer(state, 'acc'));

  it('keeps at most as many records as it is told, forgetting the least recently used', async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const writer = writerOf(2);
    for (const id of [a, b, c]) await create(writer, id);
    for (const id of [a, b, c]) await writer.load(id); // c's fold pushes a's out
    const reads = jest.spyOn(events, 'readStream');

    await writer.load(c);
    await writer.load(a);
    expect(reads.mock.calls).toEqual([
      [`customer-${c}`, 1], // kept
      [`customer-${a}`, 0], // forgotten: folded again from the start
    ]);
  });

  it('answers no_stream for a record that does not exist yet, and finds it once created', async () => {
    const writer = writerOf();
    const id = randomUUID();
    expect(await writer.load(id)).toEqual({ state: null, revision: 'no_stream' });
    await create(writer, id);
    expect((await writer.load(id)).revision).toBe(0);
  });

  it('decides first on the record it kept, without reading, and on no stream for an id just made', async () => {
    const id = randomUUID();
    const writer = writerOf();
    expect(writer.known(id)).toBeUndefined();
    await create(writer, id);
    expect(writer.known(id)).toMatchObject({ revision: 0, state: { fields: { name: 'Ada' } } });
    expect(writer.known(randomUUID(), true)).toEqual({ state: null, revision: 'no_stream' });
    const reads = jest.spyOn(events, 'readStream');
    await update(writer, id, { name: 'Ada 1' });
    expect(reads).not.toHaveBeenCalled();
  });

  it('creates without reading the stream, before or after: it answers with the fold of what it appended, at the business time it stamped', async () => {
    const id = randomUUID();
    const reads = jest.spyOn(events, 'readStream');
    const at = new Date('2001-01-01T00:00:00.250Z');
    const writer = writerOf(undefined, () => at);
    const written = await create(writer, id);
    expect(written.appended?.revision).toBe(0);
    expect(await writer.created(id, written, 'acc')).toBe(written.record);
    expect(reads).not.toHaveBeenCalled();
    reads.mockRestore();
    const [stored] = await events.readStream(`customer-${id}`);
    expect(stored.metadata.occurredAt).toBe('2001-01-01T00:00:00.250Z');
    expect(stored.metadata.eventVersion).toBe(2); // the shape it was written in
    expect(stored.recordedAt).not.toEqual(at); // the store's own time: not what the record's created goes by
    expect(written.record?.created).toBe(978_307_200);
    expect(written.record).toEqual((await writerOf().load(id)).state);
  });

  it('stamps an event no earlier than the one before it, whatever its host’s clock says: a stream’s times stay in order', async () => {
    const id = randomUUID();
    await create(
      writerOf(undefined, () => new Date('2030-01-01T00:00:00.000Z')),
      id,
    ); // a host whose clock is ahead
    const behind = writerOf(undefined, () => new Date('2020-01-01T00:00:00.000Z'));
    await update(behind, id, { name: 'Ada L' });
    await update(behind, id, { name: 'Ada M' }); // decided on the fold it kept
    const times = (await events.readStream(`customer-${id}`)).map((e) => e.metadata.occurredAt);
    expect(times).toEqual(['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z']);
  });

  it('folds a record stored before events carried their business time with the time the store recorded', async () => {
    const id = randomUUID();
    const metadata = { accountId: 'acc', correlationId: 'c', causationId: 'c' };
    await events.appendToStream(
      `customer-${id}`,
      [{ id: randomUUID(), type: 'CustomerCreated', data: { name: 'Ada', email: 'a@x.io' }, metadata }],
      'no_stream',
    );
    const [stored] = await events.readStream(`customer-${id}`);
    expect(stored.metadata.occurredAt).toBeUndefined();
    expect((await writerOf().load(id)).state?.created).toBe(Math.floor(stored.recordedAt.getTime() / 1000));
    // One whose stamp does not parse (written by hand) goes by the recorded time too, not an invalid date.
    const other = randomUUID();
    const stamped = { ...metadata, occurredAt: 'yesterday' };
    await events.appendToStream(
      `customer-${other}`,
      [{ id: randomUUID(), type: 'CustomerCreated', data: { name: 'Ada', email: 'a@x.io' }, metadata: stamped }],
      'no_stream',
    );
    const [odd] = await events.readStream(`customer-${other}`);
    expect((await writerOf().load(other)).state?.created).toBe(Math.floor(odd.recordedAt.getTime() / 1000));
  });

  describe('a create that finds its id taken (an Idempotency-Key’s retry) answers the record as it is now', () => {
    const retry = async (writer: RecordWriter, id: string, accountId = 'acc') => {
      const written = await writer.write(id, { accountId, requestId: 'req' }, randomUUID(), (state) => decideCreateCustomer(state, { name: 'Ada' }), {
        isNew: true,
      });
      expect(written.appended).toBeNull();
      return writer.created(id, written, accountId);
    };

    it('the record, live', async () => {
      const id = randomUUID();
      await create(writerOf(), id, 'Grace');
      expect((await retry(writerOf(), id)).fields.name).toBe('Grace');
    });

    it('not found once deleted', async () => {
      const id = randomUUID();
      const writer = writerOf();
      await create(writer, id);
      await writer.write(id, context, randomUUID(), (state) => decideDeleteCustomer(state, 'acc'));
      await expect(retry(writerOf(), id)).rejects.toMatchObject({ reason: 'not_found' });
    });

    it('not found in another account', async () => {
      const id = randomUUID();
      await create(writerOf(), id);
      await expect(retry(writerOf(), id, 'other')).rejects.toMatchObject({ reason: 'not_found' });
    });

    it('not found once its key is destroyed (its erasure not appended yet)', async () => {
      const id = randomUUID();
      await create(writerOf(), id);
      const destroyed = { current: async () => null } as unknown as DataKeys;
      await expect(retry(new RecordWriter(CUSTOMER, new UpcastingEventStore(events, [CUSTOMER]), noReadModels, destroyed), id)).rejects.toMatchObject({
        reason: 'not_found',
      });
    });
  });

  it('reads the stream and decides again when a create finds its id taken (an idempotent retry)', async () => {
    const id = randomUUID();
    await create(writerOf(), id, 'Ada');
    const reads = jest.spyOn(events, 'readStream');

    // The decision on the record as read: it exists, so the create has nothing left to do.
    expect((await create(writerOf(), id, 'Grace')).appended).toBeNull();
    expect(reads.mock.calls).toEqual([[`customer-${id}`, 0]]);
    expect((await writerOf().load(id)).state?.fields.name).toBe('Ada');
  });
});
