import { ApiError } from '../errors';
import { comparePositions, NewEventMetadata, EventStore, Position, StoredEvent, WrongExpectedRevisionError } from '../event-store/event-store.port';
import type { RecordState } from '../records/record';
import type { RecordWriter } from '../records/record-writer';
import { withMetadata } from '../records/record-writer';
import { slugKey } from './profile.decider';

/** How long a fresh reservation is held even before its profile shows the slug: a write in flight. By the event store's clock. */
export const RESERVATION_GRACE_MS = 60_000;
const MAX_ATTEMPTS = 10;

interface Reservation {
  slug: string;
  profileId: string;
}

/**
 * Service-wide, case-insensitive slug uniqueness, decided on the write side: each slug has a stream
 * `profile_slug-<lowercased slug>` whose last event says who holds it. Taking a slug appends
 * SlugReserved at the revision read, so of two racing profiles exactly one wins. Giving it up
 * appends SlugReleased. Appends to two streams cannot be atomic, so a reservation whose profile
 * (after a grace period) does not carry the slug, because a crash came between the two appends, is
 * stale and may be taken over; so at once is one whose profile is deleted or erased, which no write
 * makes carry a slug again. Nothing fences a profile's append against a takeover, so both sides
 * check after their append: the taker that its takeover was due (reserve), the profile's write that
 * it still holds the reservation (holds), undoing itself if not.
 */
export class SlugReservations {
  constructor(
    private readonly eventStore: EventStore,
    private readonly profiles: RecordWriter,
  ) {}

  /**
   * Takes the slug for the profile and returns the reservation's position. A reservation the
   * profile holds already is made again, not taken as it is: a release of it under way (by a write
   * that moved the profile off the slug) then fails on the moved revision, or sees a reservation
   * newer than its write and leaves it (see release).
   */
  async reserve(slug: string, profileId: string, metadata: NewEventMetadata): Promise<Position> {
    const streamId = streamOf(slug);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const last = await this.lastEvent(streamId);
      let takingOver: StoredEvent | undefined;
      if (last?.type === 'SlugReserved' && (last.data as unknown as Reservation).profileId !== profileId) {
        if (await this.isHeld(last)) throw slugTaken(slug);
        takingOver = last;
      }
      try {
        const { position } = await this.eventStore.appendToStream(
          streamId,
          withMetadata([{ type: 'SlugReserved', data: { slug, profileId } }], metadata),
          last ? last.revision : 'no_stream',
        );
        if (takingOver && !(await this.tookOver(streamId, takingOver, metadata))) throw slugTaken(slug);
        return position;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
      }
    }
    throw new ApiError('CONFLICT', `The slug "${slug}" is being claimed by others right now; try again.`, [
      { field: 'slug', message: 'slug is being claimed concurrently' },
    ]);
  }

  /**
   * Frees the slug if this profile holds the reservation but no longer carries the slug. With
   * `madeBy`, the position of the last event appended by the write giving the slug up, only a
   * reservation made no later than that: a newer one belongs to another write of the profile, in
   * flight, that takes the slug back (its event may not be appended yet, so the profile does not
   * carry the slug yet either).
   */
  async release(slug: string, profileId: string, metadata: NewEventMetadata, madeBy?: Position): Promise<void> {
    const streamId = streamOf(slug);
    const last = await this.lastEvent(streamId);
    if (last?.type !== 'SlugReserved' || (last.data as unknown as Reservation).profileId !== profileId) return;
    if (madeBy && comparePositions(last.position, madeBy) > 0) return;
    if (await this.carries(profileId, slug)) return;
    try {
      await this.eventStore.appendToStream(streamId, withMetadata([{ type: 'SlugReleased', data: { slug, profileId } }], metadata), last.revision);
    } catch (error) {
      // Someone else moved the reservation on: it is not ours to release any more.
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }

  /** Whether the profile's reservation is still the slug's last word: checked after its append (see the class). */
  async holds(slug: string, profileId: string): Promise<boolean> {
    const last = await this.lastEvent(streamOf(slug));
    return last?.type === 'SlugReserved' && (last.data as unknown as Reservation).profileId === profileId;
  }

  /**
   * Before a takeover: whether the reservation still counts. Not once its profile is gone, grace
   * period or not: an erasure frees the slug its profile had when it read it, before the key went,
   * and a slug set by a write racing the erasure would otherwise stay held for the grace period.
   * This host's clock only says when to try: the takeover's append, timed by the event store,
   * decides (tookOver).
   */
  private async isHeld(reservation: StoredEvent): Promise<boolean> {
    const { slug, profileId } = reservation.data as unknown as Reservation;
    const { state } = await this.profiles.load(profileId);
    if (isGone(state)) return false;
    return Date.now() - reservation.recordedAt.getTime() < RESERVATION_GRACE_MS || carriesSlug(state, slug);
  }

  /**
   * After a takeover's append: it was due if the profile that held it is gone, or if the grace
   * period had passed by the store's clock (the two reservations' times) and that profile still does
   * not carry the slug (its append may have landed since it was looked at). If not, the reservation
   * is given back to that profile.
   */
  private async tookOver(streamId: string, previous: StoredEvent, metadata: NewEventMetadata): Promise<boolean> {
    const [mine] = await this.eventStore.readStream(streamId, previous.revision + 1);
    const held = previous.data as unknown as Reservation;
    const { state } = await this.profiles.load(held.profileId);
    const graceOver = mine.recordedAt.getTime() - previous.recordedAt.getTime() >= RESERVATION_GRACE_MS;
    const due = isGone(state) || (graceOver && !carriesSlug(state, held.slug));
    if (due) return true;
    try {
      await this.eventStore.appendToStream(streamId, withMetadata([{ type: 'SlugReserved', data: { ...held } }], metadata), mine.revision);
    } catch (error) {
      // Moved on since: the reservation is someone else's to settle.
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
    return false;
  }

  private async carries(profileId: string, slug: string): Promise<boolean> {
    return carriesSlug((await this.profiles.load(profileId)).state, slug);
  }

  private async lastEvent(streamId: string): Promise<StoredEvent | undefined> {
    const events = await this.eventStore.readStream(streamId);
    return events[events.length - 1];
  }
}

const carriesSlug = (state: RecordState | null, slug: string) => !!state && !state.deleted && slugKey(state.fields.slug ?? '') === slugKey(slug);

/** Deleted or erased (an erased profile is deleted too): no write makes it live again. */
const isGone = (state: RecordState | null) => !!state?.deleted;

const streamOf = (slug: string) => `profile_slug-${slugKey(slug)}`;

export const slugTaken = (slug: string) =>
  new ApiError('CONFLICT', `The slug "${slug}" is already taken.`, [{ field: 'slug', message: 'slug is already taken' }]);
