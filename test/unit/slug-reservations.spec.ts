import { randomUUID } from 'node:crypto';
import type { Position } from '../../src/event-store/event-store.port';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { CreateProfileCommand, CreateProfileHandler, UpdateProfileCommand, UpdateProfileHandler } from '../../src/profiles/profile.commands';
import { PROFILE } from '../../src/profiles/profile.decider';
import { SlugReservations } from '../../src/profiles/slug-reservations';
import type { ProjectionsService } from '../../src/projections/projections.service';
import { RecordWriter } from '../../src/records/record-writer';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { openTempSqlite } from '../support/temp-sqlite';

/** The read models are not this test's subject: a write here need not wait for them. */
const noReadModels = { waitFor: async (_streamId: string, _position: Position) => undefined } as unknown as ProjectionsService;
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
    profiles = new RecordWriter(PROFILE, events, noReadModels);
    slugs = new SlugReservations(events, profiles);
  });
  afterEach(async () => {
    await events.close();
    sqlite.dispose();
  });

  const create = (id: string, slug: string) => new CreateProfileHandler(profiles, slugs).execute(new CreateProfileCommand(context, id, { name: 'Shop', slug }));
  const update = (id: string, slug: string) => new UpdateProfileHandler(profiles, slugs).execute(new UpdateProfileCommand(context, id, { slug }));
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
    await expect(slugs.reserve('b', 'Y', metadata)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('leaves a reservation made after the write giving the slug up: a write of the profile in flight takes it back', async () => {
    const X = 'X';
    await slugs.reserve('a', X, metadata);
    const { position: movedOff } = await events.appendToStream('profile-X', [{ id: randomUUID(), type: 'ProfileUpdated', data: { slug: 'b' }, metadata }], 'no_stream');
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

    expect((await new RecordWriter(PROFILE, events, noReadModels).load(X)).state?.fields.slug).toBe('b');
    expect((await reservations('b')).at(-1)).toBe('SlugReserved(X)');
    await expect(slugs.reserve('b', 'Y', metadata)).rejects.toMatchObject({ code: 'CONFLICT' });
  });
});
