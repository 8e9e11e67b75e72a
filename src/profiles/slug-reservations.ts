import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { conflict, contended, Refusal } from '../errors';
import {
  comparePositions,
  NewEventMetadata,
  EventStore,
  Position,
  StoredEvent,
  StreamTombstonedError,
  WrongExpectedRevisionError,
} from '../event-store/event-store.port';
import { ReadModelsBehindError } from '../projections/read-models-behind.error';
import type { CommandContext } from '../records/command-context';
import { Decision, Folded, withMetadata } from '../records/handle-command';
import type { Fields, RecordState } from '../records/record';
import { eventMetadata, ifAt, Precondition, RecordWriter, Written } from '../records/record-writer';
import { PROFILE, ProfileCommand, profileDecider, ProfileEvent, slugChange, slugKey } from './profile.decider';

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
export class SlugReservations<Profiles extends Pick<RecordWriter, 'load'> = RecordWriter> {
  constructor(
    private readonly eventStore: EventStore,
    /** Where the profiles are read from: the service's writer, or a plain fold of their streams (the CLI's import, which reserves only). */
    private readonly profiles: Profiles,
  ) {}

  /** Writes a profile through the slug claim (SlugClaim): every profile write but its erasure. */
  write(this: SlugReservations<RecordWriter>, write: ProfileWrite): Promise<Written> {
    return new SlugClaim(this, this.profiles, write).run();
  }

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
    throw conflict(`The slug "${slug}" is being claimed by others right now; try again.`, [{ field: 'slug', message: 'slug is being claimed concurrently' }]);
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

  /** Whether reserve would refuse the slug to the profile, as things stand: for a check that reserves nothing (the import's --dry-run). */
  async isTaken(slug: string, profileId: string): Promise<boolean> {
    const last = await this.lastEvent(streamOf(slug));
    return last?.type === 'SlugReserved' && (last.data as unknown as Reservation).profileId !== profileId && (await this.isHeld(last));
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

export const slugTaken = (slug: string) => conflict(`The slug "${slug}" is already taken.`, [{ field: 'slug', message: 'slug is already taken' }]);

/** A profile write, as the slug claim runs it. */
export interface ProfileWrite {
  id: string;
  context: CommandContext;
  commandId: string;
  command: ProfileCommand;
  precondition?: Precondition;
  /** The id was just made (a create): the first plan is made on no stream, without reading. */
  isNew?: boolean;
}

const logger = new Logger('SlugClaim');

/** How many times a write plans again because the profile changed under it before giving up (409). */
const MAX_PLANS = 10;

/** A decision made on a fold of the profile, and what it does to the profile's slug (slugChange). */
interface Plan {
  folded: Folded;
  events: ProfileEvent[];
  /** Made on what the writer knew without reading: a refusal or no change is planned again on the stream as read. */
  guessed: boolean;
  taken?: string;
  givenUp?: string;
}

/**
 * One profile write that may take or give up slugs, as a process of named steps:
 *
 * 0. plan: decide on the profile as the writer knows it (or reads it), a pure decision;
 * 1. reserve the slug the decision takes;
 * 2. append the decision at the revision it was planned on: the reservation then came after every
 *    append that state holds, one that gave the slug up included, whose release leaves a
 *    reservation made after it. The stream moved on since: back to 0;
 * 3. verify the reservation still holds: nothing fences the append against a takeover (see
 *    SlugReservations), so a write whose reservation was taken over while its append was on its way
 *    (a slow append) is undone and answered 409, and no two profiles carry one slug;
 * 4. release every slug the write touched unless the profile carries it, or a write after this one
 *    reserved it again. Only once the write's outcome is known (a success or a refusal): after any
 *    other failure its append may still land (a store's deadline passed), and such a reservation is
 *    taken over once its grace period is past, if the profile does not carry the slug.
 *
 * Steps 0 to 2 run in the profile's turn (RecordWriter.inTurn), so this process's writes to one
 * profile plan one after another.
 */
export class SlugClaim {
  private readonly touched = new Set<string>();
  /** This write's appends follow one another, so the last one made is the latest. */
  private lastAppended: Position | undefined;
  /** The profile as this write's last append left it: a slug it carries needs no release. */
  private leftAs: RecordState | null = null;
  private readonly metadata: NewEventMetadata;
  private readonly decide: Decision<ProfileEvent>;

  constructor(
    private readonly reservations: SlugReservations,
    private readonly profiles: RecordWriter,
    private readonly write: ProfileWrite,
  ) {
    const { context, commandId, command, precondition } = write;
    this.metadata = eventMetadata(context, commandId);
    this.decide = ifAt(PROFILE, context.accountId, precondition, (state) => profileDecider.decide(command, state)) as Decision<ProfileEvent>;
  }

  /** Returns what the write did, once the read models show it. */
  async run(): Promise<Written> {
    const { id } = this.write;
    let settled = false;
    try {
      for (let attempt = 1; attempt <= MAX_PLANS; attempt++) {
        const done = await this.profiles.inTurn(id, async () => {
          const plan = await this.plan(attempt === 1);
          if (!plan || !(await this.reserve(plan))) return undefined;
          const written = await this.append(plan);
          return written && { plan, written };
        });
        if (!done) continue;
        await this.verify(done.plan, done.written);
        settled = true;
        await this.profiles.shown(id, done.written);
        return done.written;
      }
      throw contended(PROFILE.label);
    } catch (error) {
      settled ||= isSettled(error);
      throw error;
    } finally {
      if (settled) await this.release();
    }
  }

  /** Step 0. undefined: refused or changing nothing on a guess, which may be out of date; planned again on the stream as read. */
  async plan(mayGuess: boolean): Promise<Plan | undefined> {
    const { id, isNew } = this.write;
    const guess = mayGuess ? this.profiles.known(id, isNew) : undefined;
    const folded = guess ?? (await this.profiles.load(id));
    let events: ProfileEvent[];
    try {
      events = this.decide(folded.state);
    } catch (error) {
      if (guess && error instanceof Refusal) return undefined;
      throw await this.profiles.refusalOf(id, error);
    }
    if (guess && events.length === 0) return undefined;
    return { folded, events, guessed: !!guess, ...slugChange(folded.state, events) };
  }

  /** Step 1. false: refused on a guess, planned again on the stream as read; refused on that, the write's refusal. */
  async reserve(plan: Plan): Promise<boolean> {
    if (!plan.taken) return true;
    try {
      this.lastAppended = await this.reservations.reserve(plan.taken, this.write.id, this.metadata);
      this.touched.add(plan.taken);
      return true;
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      if (plan.guessed) return false;
      // Answered as any refusal of the write: not found for a profile being erased.
      throw await this.profiles.refusalOf(this.write.id, error);
    }
  }

  /** Step 2. undefined: the stream moved on since the plan; planned again. */
  async append(plan: Plan): Promise<Written | undefined> {
    const { id, context, commandId } = this.write;
    try {
      const written = await this.profiles.append(id, plan.folded, () => plan.events, context, commandId);
      if (written.appended) {
        this.lastAppended = written.appended.position;
        this.leftAs = written.record;
      }
      if (plan.givenUp) this.touched.add(plan.givenUp);
      return written;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError) return undefined;
      throw error;
    }
  }

  /**
   * Step 3: a reservation taken over during the append undoes the write, refused as the slug
   * taken. One no longer held because a later write moved the profile off the slug (and released
   * it) is no conflict: this write stands, and that one after it.
   */
  async verify(plan: Plan, written: Written): Promise<void> {
    const { id } = this.write;
    if (!written.appended || !plan.taken || (await this.reservations.holds(plan.taken, id))) return;
    if (!carriesSlug((await this.profiles.load(id)).state, plan.taken)) return;
    this.leftAs = null;
    this.lastAppended = (await this.undo(plan)) ?? this.lastAppended;
    throw slugTaken(plan.taken);
  }

  /**
   * Step 4. A slug the profile carries as this write left it is not read for: a later write that
   * gives it up releases it. A release that fails leaves the write's answer as it is: the
   * reservation is taken over once its grace period is past, the profile not carrying the slug.
   */
  async release(): Promise<void> {
    if (!this.lastAppended) return;
    for (const slug of this.touched) {
      if (carriesSlug(this.leftAs, slug)) continue;
      await this.reservations
        .release(slug, this.write.id, this.metadata, this.lastAppended)
        .catch((error: Error) => logger.warn(`Left the reservation of slug "${slug}" to be taken over later: ${error.message}`));
    }
  }

  /**
   * Undoes a write whose slug another profile took over: a create by deleting the profile, an
   * update by setting back what it changed and what a write after it has not changed since (the
   * undo runs outside the profile's turn). Nothing once the profile no longer carries the slug. The
   * slug it had before is reserved again first: since the write the profile did not carry it, so
   * another may have taken it over meanwhile, and then the undo leaves the profile with no slug.
   * Returns the undoing append's position.
   */
  private async undo({ folded: { state: before }, events, taken }: Plan): Promise<Position | undefined> {
    const { id, context } = this.write;
    const changes: Fields = events[0]?.data ?? {};
    const previous = Object.fromEntries(Object.keys(changes).map((field) => [field, before?.fields[field] ?? '']));
    if (previous.slug) {
      const kept = await this.reservations.reserve(previous.slug, id, this.metadata).then(
        () => true,
        (error) => {
          if (error instanceof Refusal && error.reason === 'conflict') return false;
          throw error;
        },
      );
      if (!kept) previous.slug = '';
    }
    const { accountId } = context;
    const undoing = (state: RecordState | null): ProfileEvent[] => {
      if (!carriesSlug(state, taken!)) return [];
      if (!before) return profileDecider.decide({ type: 'DeleteProfile', data: { accountId } }, state);
      const unchanged = Object.keys(previous).filter((field) => (state!.fields[field] ?? '') === changes[field]);
      const fields = Object.fromEntries(unchanged.map((field) => [field, previous[field]]));
      return profileDecider.decide({ type: 'UpdateProfile', data: { accountId, fields } }, state);
    };
    const { appended } = await this.profiles.write(id, context, randomUUID(), undoing);
    return appended?.position;
  }
}

/** Whether a write that failed so is known not to append any more: a refusal, or saved and not yet shown. */
const isSettled = (error: unknown) => error instanceof Refusal || error instanceof ReadModelsBehindError || error instanceof StreamTombstonedError;
