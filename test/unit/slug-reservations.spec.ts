import { randomUUID } from 'node:crypto';
import type { Position, StoredEvent } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import type { DataKeys } from '../../src/sealing/data-keys';
import { RecordEraser } from '../../src/records/record-eraser';
import {
  CreateProfileCommand,
  CreateProfileHandler,
  EraseProfileCommand,
  EraseProfileHandler,
  UpdateProfileCommand,
  UpdateProfileHandler,
} from '../../src/profiles/profile.commands';
import { PROFILE } from '../../src/profiles/profile.decider';
import { SlugClaim, SlugReservations } from '../../src/profiles/slug-reservations';
import type { ProjectionsService } from '../../src/projections/projections.service';
import type { ReadStore } from '../../src/read-store/read-store.port';
import { RecordWriter } from '../../src/records/record-writer';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { openTempSqlite } from '../support/temp-sqlite';

/** The read models are not this test's subject: a write here need not wait for them. */
const noReadModels = { waitFor: async (_streamId: string, _position: Position) => undefined } as unknown as ProjectionsService;
/** Events in plain here: no record has a data key, destroyed or not. */
const unsealed = { current: async () => undefined } as unknown as DataKeys;
const context = { accountId: 'acc', requestId: 'req' };
const metadata = { accountId: 'acc', correlationId: 'req', causationId: 'c', schemaVersion: 2 };

describe('slug reservations, with the profile writes that take and give up slugs', () => {
  let sqlite: ReturnType<typeof openTempSqlite>;
  let events: SqliteEventStore;
  let profiles: RecordWriter;
  let slugs: SlugReservations;

  beforeEach(() => {
    sqlite = openTempSqlite();
    events = new SqliteEventStore(sqlite.db);
    profiles = new RecordWriter(PROFILE, events, noReadModels, unsealed);
    slugs = new SlugReservations(events, profiles);
  });
  afterEach(async () => {
    await events.close();
    sqlite.dispose();
  });

  const create = (id: string, slug: string) => new CreateProfileHandler(profiles, slugs).execute(new CreateProfileCommand(context, id, { name: 'Shop', slug }));
  const update = (id: string, slug: string) => new UpdateProfileHandler(slugs).execute(new UpdateProfileCommand(context, id, { slug }));
  /** The slug's stream, as `type(profile)` entries. */
  const reservations = async (slug: string) =>
    (await events.readStream(`profile_slug-${slug}`)).map((e) => `${e.type}(${(e.data as { profileId: string }).profileId === 'X' ? 'X' : '?'})`);

  /** The next profile read (a release's look at whether the profile carries the slug) answers only once `open` is called. */
  function holdNextLoad(): { loading: Promise<void>; open: () => void } {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    let loading!: () => void;
    const started = new Promise<void>((resolve) => (loading = resolve));
    const load = profiles.load.bind(profiles);
    jest.spyOn(profiles, 'load').mockImplementationOnce(async (id) => {
      const read = await load(id);
      loading();
      await opened;
      return read;
    });
    return { loading: started, open };
  }

  it('keeps a slug its profile takes back while a write that moved it off the slug is releasing it', async () => {
    const X = 'X';
    await create(X, 'a');
    await update(X, 'b');
    const held = holdNextLoad();
    const movingOff = update(X, 'c'); // moves the profile off "b", then its release of "b" reads the profile and waits
    await held.loading;
    await update(X, 'b'); // meanwhile another write takes "b" back, all the way
    held.open();
    await movingOff;
    expect((await profiles.load(X)).state?.fields.slug).toBe('b');
    expect((await reservations('b')).at(-1)).toBe('SlugReserved(X)');
    await expect(slugs.reserve('b', 'Y', metadata)).rejects.toMatchObject({ reason: 'conflict' });
  });

  it('leaves a reservation made after the write giving the slug up: a write of the profile in flight takes it back', async () => {
    const X = 'X';
    await slugs.reserve('a', X, metadata);
    const { position: movedOff } = await events.appendToStream(
      'profile-X',
      [{ id: randomUUID(), type: 'ProfileUpdated', data: { slug: 'b' }, metadata }],
      'no_stream',
    );
    const takenBack = await slugs.reserve('a', X, metadata); // its profile event is not appended yet
    jest.spyOn(profiles, 'load').mockResolvedValue({ state: { accountId: 'acc', fields: { slug: 'b' }, deleted: false, erased: false } } as never);

    await slugs.release('a', X, metadata, movedOff);
    expect(await reservations('a')).toEqual(['SlugReserved(X)', 'SlugReserved(X)']);
    // Bound by the newer reservation, the same release goes ahead: the bound is what kept it.
    await slugs.release('a', X, metadata, takenBack);
    expect(await reservations('a')).toEqual(['SlugReserved(X)', 'SlugReserved(X)', 'SlugReleased(X)']);
  });

  it('releases nothing after a write whose outcome is unknown: its event may still land, carrying the slug', async () => {
    const X = 'X';
    await create(X, 'a');
    // The store's deadline passes on the profile's append, which lands afterwards.
    let land: (() => Promise<unknown>) | undefined;
    const append = events.appendToStream.bind(events);
    jest.spyOn(events, 'appendToStream').mockImplementation(async (streamId, appended, expected) => {
      if (!streamId.startsWith('profile-')) return append(streamId, appended, expected);
      land = () => append(streamId, appended, expected);
      throw new StoreUnavailableError('EventStoreDB', 'deadline exceeded');
    });
    await expect(update(X, 'b')).rejects.toBeInstanceOf(StoreUnavailableError);
    await land!();
    jest.restoreAllMocks();

    expect((await new RecordWriter(PROFILE, events, noReadModels, unsealed).load(X)).state?.fields.slug).toBe('b');
    expect((await reservations('b')).at(-1)).toBe('SlugReserved(X)');
    await expect(slugs.reserve('b', 'Y', metadata)).rejects.toMatchObject({ reason: 'conflict' });
  });

  it('reserves again when the profile changed between the reservation step and the append: the slug it takes is always reserved after', async () => {
    const X = 'X';
    await create(X, 'shop');
    // X's next profile append waits until `land` is called.
    let land!: () => void;
    const landing = new Promise<void>((resolve) => (land = resolve));
    let held!: () => void;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const append = events.appendToStream.bind(events);
    jest.spyOn(events, 'appendToStream').mockImplementation(async (streamId, appended, expected) => {
      if (streamId === 'profile-X') {
        held();
        await landing;
      }
      return append(streamId, appended, expected);
    });
    const movingOff = update(X, 'other'); // reserves "other", its append held
    await holding;
    // Planned on X carrying "shop": takes no slug, reserves none, and waits its turn behind the move.
    const movingBack = update(X, 'shop');
    await new Promise((resolve) => setTimeout(resolve, 20));
    land();
    await Promise.all([movingOff, movingBack]);

    // Decided on X carrying "other", the write takes "shop": planned again, reserved, then appended.
    expect((await profiles.load(X)).state?.fields.slug).toBe('shop');
    expect((await reservations('shop')).at(-1)).toBe('SlugReserved(X)');
    expect((await reservations('other')).at(-1)).toBe('SlugReleased(X)');
    await expect(slugs.reserve('shop', 'Y', metadata)).rejects.toMatchObject({ reason: 'conflict' });
  });

  it('frees at once a slug an update moved the profile onto while it was being erased', async () => {
    await create('X', 'a');
    // The erasure reads X (slug "a"), then waits in its key's destruction until `destroy` is called.
    let destroying!: () => void;
    const reading = new Promise<void>((resolve) => (destroying = resolve));
    let destroy!: () => void;
    const destroyed = new Promise<void>((resolve) => (destroy = resolve));
    const keys = {
      current: async () => undefined,
      logErasure: async () => undefined,
      destroy: () => (destroying(), destroyed),
      store: { finishErasure: async () => undefined },
    } as unknown as DataKeys;
    const readModels = { erase: async () => undefined } as unknown as ReadStore;
    const eraser = new RecordEraser(PROFILE, 'profiles', profiles, keys, readModels);
    const erasing = new EraseProfileHandler(eraser, slugs).execute(new EraseProfileCommand(context, 'X'));
    await reading;
    await update('X', 'b'); // moves X onto "b" and gives "a" up, all before the erasure is appended
    destroy();
    await erasing;
    expect((await profiles.load('X')).state).toMatchObject({ erased: true });

    // Within the grace period, which holds a slug for a write in flight: none can be, for an erased profile.
    await create('Y', 'b');
    await create('Z', 'a');
    expect((await profiles.load('Y')).state?.fields.slug).toBe('b');
    expect((await profiles.load('Z')).state?.fields.slug).toBe('a');
  });

  describe('a takeover, fenced', () => {
    /**
     * Slugs and profiles on the event store as read with some events' times `earlier(event)` ms
     * before they were stamped: as a store whose clock is behind this host's, or an event from
     * that long ago.
     */
    function stampedEarlier(earlier: (event: StoredEvent) => number): void {
      const read = events.readStream.bind(events);
      const store = Object.assign(Object.create(events) as SqliteEventStore, {
        readStream: async (streamId: string, from?: number) =>
          (await read(streamId, from)).map((e) => ({ ...e, recordedAt: new Date(e.recordedAt.getTime() - earlier(e)) })),
      });
      profiles = new RecordWriter(PROFILE, store, noReadModels, unsealed);
      slugs = new SlugReservations(store, profiles);
    }
    const isXsReservation = (e: StoredEvent) => e.streamId === 'profile_slug-shop' && e.revision === 0;

    /** X's profile append waits until `land` is called. */
    function holdXsAppend(): { land: () => void } {
      let land!: () => void;
      const landing = new Promise<void>((resolve) => (land = resolve));
      const append = events.appendToStream.bind(events);
      jest.spyOn(events, 'appendToStream').mockImplementation(async (streamId, appended, expected) => {
        if (streamId === 'profile-X') await landing;
        return append(streamId, appended, expected);
      });
      return { land };
    }

    it("goes by the store's clock, not this host's: a host 61 s ahead tries too early, gives the reservation back and answers 409", async () => {
      stampedEarlier(() => 61_000);
      await slugs.reserve('shop', 'X', metadata); // X's profile is on its way
      await expect(create('Y', 'shop')).rejects.toMatchObject({ reason: 'conflict' });
      // Once on each of the write's two decisions (the first on a guess), each given back.
      expect(await reservations('shop')).toEqual(['SlugReserved(X)', 'SlugReserved(?)', 'SlugReserved(X)', 'SlugReserved(?)', 'SlugReserved(X)']);
      expect((await profiles.load('Y')).state).toBeNull(); // Y's profile never appended
    });

    it('undoes a create whose append was so slow that another profile took its reservation over meanwhile: one profile carries the slug', async () => {
      stampedEarlier((e) => (isXsReservation(e) ? 61_000 : 0)); // reserved 61 s ago by the store's clock
      const { land } = holdXsAppend();
      const x = create('X', 'shop');
      x.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20)); // X reserved, its profile's append on its way
      await create('Y', 'shop'); // X does not carry the slug yet: taken over
      land();

      await expect(x).rejects.toMatchObject({ reason: 'conflict' });
      expect((await profiles.load('X')).state).toMatchObject({ deleted: true });
      expect((await profiles.load('Y')).state?.fields.slug).toBe('shop');
      expect((await reservations('shop')).at(-1)).toBe('SlugReserved(?)');
    });

    it('gives a takeover back when the profile it looked at carries the slug by the time the takeover is appended', async () => {
      stampedEarlier((e) => (isXsReservation(e) ? 61_000 : 0));
      const { land } = holdXsAppend();
      const x = create('X', 'shop');
      await new Promise((resolve) => setTimeout(resolve, 20));
      // Y looks at X (no slug yet); X's append lands and X finds its reservation held, before Y's takeover.
      const load = profiles.load.bind(profiles);
      jest.spyOn(profiles, 'load').mockImplementationOnce(async (id) => {
        const read = await load(id);
        land();
        await x;
        return read;
      });
      await expect(create('Y', 'shop')).rejects.toMatchObject({ reason: 'conflict' });

      expect((await profiles.load('X')).state?.fields.slug).toBe('shop');
      expect((await profiles.load('Y')).state).toBeNull();
      expect(await reservations('shop')).toEqual(['SlugReserved(X)', 'SlugReserved(?)', 'SlugReserved(X)']);
    });

    it('sets an update back when its slug was taken over while it appended', async () => {
      await create('X', 'old');
      stampedEarlier((e) => (e.streamId === 'profile_slug-shop' && e.revision === 0 ? 61_000 : 0));
      const { land } = holdXsAppend();
      const x = new UpdateProfileHandler(slugs).execute(new UpdateProfileCommand(context, 'X', { slug: 'shop', name: 'New name' }));
      x.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await create('Y', 'shop');
      land();

      await expect(x).rejects.toMatchObject({ reason: 'conflict' });
      expect((await profiles.load('X')).state?.fields).toMatchObject({ slug: 'old', name: 'Shop' });
      expect((await reservations('old')).at(-1)).toBe('SlugReserved(X)'); // still X's: it carries it again
    });

    it('sets an update back without its old slug when another profile took that over meanwhile: one profile carries each slug', async () => {
      await create('X', 'old');
      stampedEarlier((e) => (e.streamId.startsWith('profile_slug-') && e.revision === 0 ? 61_000 : 0));
      const { land } = holdXsAppend();
      const x = new UpdateProfileHandler(slugs).execute(new UpdateProfileCommand(context, 'X', { slug: 'shop', name: 'New name' }));
      x.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await create('Y', 'shop'); // takes "shop" over while X's append is on its way
      // Once X's append has landed (X carries "shop", no longer "old"), Z takes "old" over, before X's undo.
      const holds = slugs.holds.bind(slugs);
      jest.spyOn(slugs, 'holds').mockImplementationOnce(async (slug, id) => {
        await create('Z', 'old');
        return holds(slug, id);
      });
      land();

      await expect(x).rejects.toMatchObject({ reason: 'conflict' });
      expect((await profiles.load('X')).state?.fields).toMatchObject({ slug: '', name: 'Shop' });
      expect((await profiles.load('Y')).state?.fields.slug).toBe('shop');
      expect((await profiles.load('Z')).state?.fields.slug).toBe('old');
    });
  });

  describe('the slug claim, step by step', () => {
    const claim = (id: string, fields: Record<string, string>, isNew = false) =>
      new SlugClaim(slugs, profiles, {
        id,
        context,
        commandId: randomUUID(),
        command: isNew ? { type: 'CreateProfile', data: { fields } } : { type: 'UpdateProfile', data: { accountId: 'acc', fields } },
        isNew,
      });
    /** A profile made through the claim's writer, as a create makes it. */
    const createdAs = (id: string, fields: Record<string, string>) =>
      slugs.write({ id, context, commandId: randomUUID(), command: { type: 'CreateProfile', data: { fields } }, isNew: true });
    const holder = async (slug: string) => {
      const events_ = await events.readStream(`profile_slug-${slug}`);
      const last = events_.at(-1);
      return last?.type === 'SlugReserved' ? (last.data as { profileId: string }).profileId : undefined;
    };

    it('plans on what the writer knows without reading, and leaves a refusal on that guess to a plan on the stream as read', async () => {
      await createdAs('X', { name: 'Shop', slug: 'a' });
      const reads = jest.spyOn(events, 'readStream');
      const plan = await claim('X', { slug: 'b' }).plan(true);
      expect(plan).toMatchObject({ guessed: true, taken: 'b', givenUp: 'a', events: [{ type: 'ProfileUpdated', data: { slug: 'b' } }] });
      expect(reads).not.toHaveBeenCalled();
      // Another account's profile: refused. On a guess, planned again; on the stream as read, the write's answer.
      const other = new SlugClaim(slugs, profiles, {
        id: 'X',
        context: { accountId: 'other', requestId: 'r' },
        commandId: 'c',
        command: { type: 'DeleteProfile', data: { accountId: 'other' } },
      });
      expect(await other.plan(true)).toBeUndefined();
      await expect(other.plan(false)).rejects.toMatchObject({ reason: 'not_found' });
    });

    it('reserves the slug a plan takes; refused on a guess it plans again, refused on the stream as read it answers 409', async () => {
      await createdAs('Y', { name: 'Other', slug: 'b' });
      const x = claim('X', { name: 'Shop', slug: 'b' }, true);
      expect(await x.reserve((await x.plan(true))!)).toBe(false);
      await expect(x.reserve((await x.plan(false))!)).rejects.toMatchObject({ reason: 'conflict', message: 'The slug "b" is already taken.' });
      const free = claim('Z', { name: 'Shop', slug: 'c' }, true);
      expect(await free.reserve((await free.plan(true))!)).toBe(true);
      expect(await holder('c')).toBe('Z');
    });

    it('appends on the revision the plan was made on, and plans again once the stream has moved on', async () => {
      await createdAs('X', { name: 'Shop' });
      const x = claim('X', { slug: 'b' });
      const plan = (await x.plan(false))!;
      await profiles.write('X', context, randomUUID(), () => [{ type: 'ProfileUpdated', data: { name: 'Renamed' } }]);
      expect(await x.append(plan)).toBeUndefined();
      const again = (await x.plan(false))!;
      expect((await x.append(again))?.record?.fields).toEqual({ name: 'Renamed', slug: 'b' });
    });

    it('verifies the reservation after the append: one taken over meanwhile undoes the write and answers 409', async () => {
      await createdAs('X', { name: 'Shop' });
      const x = claim('X', { slug: 'b' });
      const plan = (await x.plan(false))!;
      await x.reserve(plan);
      const written = (await x.append(plan))!;
      await events.appendToStream('profile_slug-b', [{ id: randomUUID(), type: 'SlugReserved', data: { slug: 'b', profileId: 'Y' }, metadata }], 'any');
      await expect(x.verify(plan, written)).rejects.toMatchObject({ reason: 'conflict' });
      expect((await profiles.load('X')).state?.fields).toEqual({ name: 'Shop', slug: '' });
    });

    it('lets a write stand whose reservation a later write of the profile released, moving it off the slug', async () => {
      await createdAs('X', { name: 'Shop' });
      const x = claim('X', { slug: 'b' });
      const plan = (await x.plan(false))!;
      await x.reserve(plan);
      const written = (await x.append(plan))!;
      // A later write moves the profile from "b" to "c" before this one verifies, releasing "b".
      await slugs.write({ id: 'X', context, commandId: randomUUID(), command: { type: 'UpdateProfile', data: { accountId: 'acc', fields: { slug: 'c' } } } });
      expect(await holder('b')).toBeUndefined();
      await expect(x.verify(plan, written)).resolves.toBeUndefined();
      expect((await profiles.load('X')).state?.fields.slug).toBe('c');
      expect(await holder('c')).toBe('X');
    });

    it('sets back, when the slug was taken over, only what no later write has changed since', async () => {
      await createdAs('X', { name: 'Shop' });
      const x = claim('X', { slug: 'b', tel: '21' });
      const plan = (await x.plan(false))!;
      await x.reserve(plan);
      const written = (await x.append(plan))!;
      await profiles.write('X', context, randomUUID(), () => [{ type: 'ProfileUpdated', data: { tel: '22' } }]); // a later write
      await events.appendToStream('profile_slug-b', [{ id: randomUUID(), type: 'SlugReserved', data: { slug: 'b', profileId: 'Y' }, metadata }], 'any');
      await expect(x.verify(plan, written)).rejects.toMatchObject({ reason: 'conflict' });
      expect((await profiles.load('X')).state?.fields).toEqual({ name: 'Shop', slug: '', tel: '22' });
    });

    it('releases the slugs the write gave up, and reads nothing for the one its profile carries as it left it', async () => {
      await createdAs('X', { name: 'Shop', slug: 'a' });
      const x = claim('X', { slug: 'b' });
      const plan = (await x.plan(false))!;
      await x.reserve(plan);
      await x.append(plan);
      const loads = jest.spyOn(profiles, 'load');
      await x.release();
      expect(await holder('a')).toBeUndefined();
      expect(await holder('b')).toBe('X');
      expect(loads.mock.calls).toEqual([['X']]); // for "a" alone: does the profile carry it now?
    });
  });
});
