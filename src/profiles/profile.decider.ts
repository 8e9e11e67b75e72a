import type { DomainEvent } from '../event-store/event-store.port';
import { changedFields, Fields, ownedRecord, recordEvents, RecordKind, RecordState } from '../records/record';

/**
 * Where every profile change is decided: pure functions of the folded record and the request.
 * Slug uniqueness spans all accounts, so it is settled by SlugReservations, not here.
 */

export const PROFILE: RecordKind = {
  label: 'Profile',
  streamPrefix: 'profile',
  events: { created: 'ProfileCreated', updated: 'ProfileUpdated', deleted: 'ProfileDeleted', erased: 'ProfileErased' },
};

const events = recordEvents(PROFILE);

export function decideCreateProfile(state: RecordState | null, fields: Fields): DomainEvent[] {
  // The service picks ids, so an existing one is an idempotent retry re-running its create: done already.
  if (state) return [];
  return [events.created(fields)];
}

/** Appends only the fields that really change; nothing when nothing does. */
export function decideUpdateProfile(state: RecordState | null, accountId: string, update: Fields): DomainEvent[] {
  const profile = ownedRecord(PROFILE, state, accountId);
  const changes = changedFields(profile.fields, update);
  return Object.keys(changes).length ? [events.updated(changes)] : [];
}

export function decideDeleteProfile(state: RecordState | null, accountId: string): DomainEvent[] {
  ownedRecord(PROFILE, state, accountId);
  return [events.deleted()];
}


/** Slugs are unique ignoring case: this is the key they are unique by. */
export const slugKey = (slug: string) => slug.toLowerCase();
