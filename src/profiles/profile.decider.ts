import type { DomainEvent } from '../event-store/event-store.port';
import { changedFields, Decider, evolveRecord, recordUpcasters, Fields, NoData, ownedRecord, RecordKind, RecordState, withoutEmpty } from '../records/record';

/**
 * Where every profile change is decided: `profileDecider`, pure functions of the folded record and
 * the command. Slug uniqueness spans all accounts, so it is settled by SlugReservations, a step of
 * the handler before the append (profile.commands.ts); `slugChange` says what a decision asks of it.
 */

/** What a profile's stream holds. Stored as written: a type or a payload never changes. */
export type ProfileEvent =
  /** The fields that have a value. */
  | DomainEvent<'ProfileCreated', Fields>
  /** Only the fields that change; '' clears one. */
  | DomainEvent<'ProfileUpdated', Fields>
  | DomainEvent<'ProfileDeleted', NoData>
  /** Appended by RecordEraser (decideErasure, shared by both kinds), folded here like the others. */
  | DomainEvent<'ProfileErased', NoData>;

/** What may be asked of a profile; `accountId` is the account asking. Erasure is RecordEraser's: its key goes first. */
export type ProfileCommand =
  | { type: 'CreateProfile'; data: { fields: Fields } }
  | { type: 'UpdateProfile'; data: { accountId: string; fields: Fields } }
  | { type: 'DeleteProfile'; data: { accountId: string } };

// Checked against ProfileEvent, so that evolve folds the events decide appends.
const PROFILE_EVENTS = {
  created: 'ProfileCreated',
  updated: 'ProfileUpdated',
  deleted: 'ProfileDeleted',
  erased: 'ProfileErased',
} satisfies Record<keyof RecordKind['events'], ProfileEvent['type']>;

export const PROFILE: RecordKind = {
  label: 'Profile',
  streamPrefix: 'profile',
  events: PROFILE_EVENTS,
  upcasters: recordUpcasters(PROFILE_EVENTS),
};

export const profileDecider: Decider<RecordState | null, ProfileCommand, ProfileEvent> = {
  decide(command, state) {
    switch (command.type) {
      case 'CreateProfile':
        return decideCreateProfile(state, command.data.fields);
      case 'UpdateProfile':
        return decideUpdateProfile(state, command.data.accountId, command.data.fields);
      case 'DeleteProfile':
        return decideDeleteProfile(state, command.data.accountId);
    }
  },
  evolve: (state, event) => evolveRecord(PROFILE, state, event),
  initialState: () => null,
};

export function decideCreateProfile(state: RecordState | null, fields: Fields): ProfileEvent[] {
  // The service picks ids, so an existing one is an idempotent retry re-running its create: done already.
  if (state) return [];
  return [{ type: 'ProfileCreated', data: withoutEmpty(fields) }];
}

/** Appends only the fields that really change; nothing when nothing does. */
export function decideUpdateProfile(state: RecordState | null, accountId: string, update: Fields): ProfileEvent[] {
  const profile = ownedRecord(PROFILE, state, accountId);
  const changes = changedFields(profile.fields, update);
  return Object.keys(changes).length ? [{ type: 'ProfileUpdated', data: changes }] : [];
}

export function decideDeleteProfile(state: RecordState | null, accountId: string): ProfileEvent[] {
  ownedRecord(PROFILE, state, accountId);
  return [{ type: 'ProfileDeleted', data: {} }];
}

/** Slugs are unique ignoring case: this is the key they are unique by. */
export const slugKey = (slug: string) => slug.toLowerCase();

/**
 * What a decision on `state` does to the profile's slug: the slug it takes (to reserve before the
 * append) and the one it gives up (to release after). A change of case alone is neither: the key
 * stays the profile's.
 */
export function slugChange(state: RecordState | null, events: ProfileEvent[]): { taken?: string; givenUp?: string } {
  const before = state && !state.deleted ? (state.fields.slug ?? '') : '';
  let after = before;
  for (const event of events) {
    if (event.type === 'ProfileCreated' || event.type === 'ProfileUpdated') after = event.data.slug ?? after;
    else after = ''; // deleted or erased: a gone profile carries no slug
  }
  if (slugKey(after) === slugKey(before)) return {};
  return { taken: after || undefined, givenUp: before || undefined };
}
