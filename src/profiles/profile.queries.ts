import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryBus, QueryHandler } from '@nestjs/cqrs';
import { RecordAsOfQuery } from '../audit/audit.queries';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { getUnlessErased, withoutErased } from '../records/erased-records';
import { notFound } from '../errors';
import { type ListQuery, nextCursor } from '../http/list-query';
import { ProjectionsService } from '../projections/projections.service';
import { READ_STORE, ReadDocuments } from '../read-store/read-store.port';
import type { RecordState, Versioned } from '../records/record';
import { PROFILE } from './profile.decider';
import { profileProjection } from './profile.projection';
import { profileView } from './profile.view';

const COLLECTION = profileProjection.schema.name;

export type ProfileView = ReturnType<typeof profileView>;

/** One profile as it is now, or as it stood at `asOf` (epoch seconds). */
export class GetProfileQuery extends Query<Versioned<ProfileView>> {
  constructor(
    readonly accountId: string,
    readonly id: string,
    readonly asOf?: number,
  ) {
    super();
  }
}

export class ListProfilesQuery extends Query<{ profiles: ProfileView[]; total: number; capped: boolean; next?: string }> {
  constructor(
    readonly accountId: string,
    readonly list: ListQuery,
  ) {
    super();
  }
}

/**
 * A profile as given, a write's outcome, with whether it is the account's default now: a write is
 * answered from what it did, not read back (another worker's later write may show by then).
 */
export class WrittenProfileQuery extends Query<ProfileView> {
  constructor(readonly profile: RecordState) {
    super();
  }
}

/** The account's default profile is its oldest live one: derived at read time, never stored. */
async function defaultProfileId(readStore: ReadDocuments, accountId: string): Promise<string | undefined> {
  return (await readStore.oldest(COLLECTION, accountId))?.id;
}

@QueryHandler(GetProfileQuery)
export class GetProfileHandler implements IQueryHandler<GetProfileQuery, Versioned<ProfileView>> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    private readonly queries: QueryBus,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  /** `default` says whether the profile is the account's default now, as-of reads included. */
  async execute({ accountId, id, asOf }: GetProfileQuery): Promise<Versioned<ProfileView>> {
    this.projections.assertCaughtUp(COLLECTION);
    const profile =
      asOf === undefined
        ? await getUnlessErased(this.readStore, this.keys, PROFILE, COLLECTION, accountId, id)
        : await this.queries.execute(new RecordAsOfQuery(PROFILE, accountId, id, asOf));
    if (!profile) throw notFound('Profile');
    const isDefault = (await defaultProfileId(this.readStore, accountId)) === id;
    return { view: profileView(profile, isDefault), revision: profile.revision };
  }
}

@QueryHandler(WrittenProfileQuery)
export class WrittenProfileHandler implements IQueryHandler<WrittenProfileQuery, ProfileView> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    private readonly projections: ProjectionsService,
  ) {}

  async execute({ profile }: WrittenProfileQuery): Promise<ProfileView> {
    // `default` is read from the read model: one still catching up may not hold the account's older profiles yet.
    this.projections.assertCaughtUp(COLLECTION, { afterWrite: true });
    return profileView(profile, (await defaultProfileId(this.readStore, profile.accountId)) === profile.id);
  }
}

@QueryHandler(ListProfilesQuery)
export class ListProfilesHandler implements IQueryHandler<ListProfilesQuery, { profiles: ProfileView[]; total: number; capped: boolean; next?: string }> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  async execute({ accountId, list }: ListProfilesQuery) {
    this.projections.assertCaughtUp(COLLECTION);
    const { documents, total, capped } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
    const shown = await withoutErased(this.keys, PROFILE, documents);
    const defaultId = shown.length ? await defaultProfileId(this.readStore, accountId) : undefined;
    return { profiles: shown.map((p) => profileView(p, p.id === defaultId)), total, capped, next: nextCursor(documents, list.limit) };
  }
}
