import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { notFound } from '../errors';
import type { ListQuery } from '../http/list-query';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { profileProjection } from './profile.projection';
import { profileView } from './profile.view';

const COLLECTION = profileProjection.schema.name;

export type ProfileView = ReturnType<typeof profileView>;

export class GetProfileQuery extends Query<ProfileView> {
  constructor(readonly accountId: string, readonly id: string) {
    super();
  }
}

export class ListProfilesQuery extends Query<{ profiles: ProfileView[]; total: number }> {
  constructor(readonly accountId: string, readonly list: ListQuery) {
    super();
  }
}

/** The account's default profile is its oldest live one: derived at read time, never stored. */
async function defaultProfileId(readStore: ReadStore, accountId: string): Promise<string | undefined> {
  const { documents } = await readStore.find(COLLECTION, { accountId, filters: {}, order: 'oldest', offset: 0, limit: 1 });
  return documents[0]?.id;
}

@QueryHandler(GetProfileQuery)
export class GetProfileHandler implements IQueryHandler<GetProfileQuery, ProfileView> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  async execute({ accountId, id }: GetProfileQuery): Promise<ProfileView> {
    const profile = await this.readStore.get(COLLECTION, accountId, id);
    if (!profile) throw notFound('Profile');
    return profileView(profile, (await defaultProfileId(this.readStore, accountId)) === id);
  }
}

@QueryHandler(ListProfilesQuery)
export class ListProfilesHandler implements IQueryHandler<ListProfilesQuery, { profiles: ProfileView[]; total: number }> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  async execute({ accountId, list }: ListProfilesQuery) {
    const { documents, total } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
    const defaultId = documents.length ? await defaultProfileId(this.readStore, accountId) : undefined;
    return { profiles: documents.map((p) => profileView(p, p.id === defaultId)), total };
  }
}
