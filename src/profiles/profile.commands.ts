import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors';
import type { NewEventMetadata, Position } from '../event-store/event-store.port';
import type { CommandContext } from '../records/command-context';
import type { Fields, RecordState } from '../records/record';
import { Decision, eventMetadata, Precondition, RecordWriter, Written } from '../records/record-writer';
import { ProfileCommand, profileDecider, ProfileEvent, slugChange } from './profile.decider';
import { SlugReservations, slugTaken } from './slug-reservations';
import type { RecordEraser } from '../records/record-eraser';

export const PROFILE_WRITER = Symbol('ProfileWriter');
export const PROFILE_ERASER = Symbol('ProfileEraser');

/** `id` is new, or the one an Idempotency-Key claimed: creating it again appends nothing. */
export class CreateProfileCommand extends Command<RecordState> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly fields: Fields,
  ) {
    super();
  }
}

/** Answers the profile as the update left it. */
export class UpdateProfileCommand extends Command<RecordState> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly fields: Fields,
    readonly precondition?: Precondition,
  ) {
    super();
  }
}

export class DeleteProfileCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly precondition?: Precondition,
  ) {
    super();
  }
}

export class EraseProfileCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
  ) {
    super();
  }
}

/** How many times a write plans its slug again because the profile changed under it before giving up (409). */
const MAX_PLANS = 10;

/** What step 1 decided: on which revision (-1: no stream), the slug taken, and its reservation's position or refusal. */
interface SlugPlan {
  revision: number;
  slug?: string;
  reservedAt?: Position;
  refused?: ApiError;
}

/** The write decided on another revision than its slug was planned on: plan again. Never leaves the handler. */
class SlugPlanOutdated extends Error {}

const revisionOf = (state: RecordState | null) => state?.revision ?? -1;

/**
 * A profile write that may take or give up slugs, in three steps:
 *
 * 1. Reserve the slug the write takes, decided ahead on the profile as the writer knows it.
 * 2. Append, decided again by the writer on the profile at the append's revision. A decision that
 *    takes a slug is appended only on the revision step 1 planned on (the same state, so the same
 *    decision and the slug reserved): the reservation then came after every append that state
 *    holds, one that gave the slug up included, whose release leaves a reservation made after it.
 *    On another revision, back to step 1.
 * 3. Check the reservation still holds: nothing fences the append against a takeover (see
 *    SlugReservations), so a write whose reservation was taken over while its append was on its
 *    way (a slow append) is undone and answered 409, and no two profiles carry one slug.
 *
 * Afterwards every slug the write touched is released unless the profile carries it, or a write
 * after this one reserved it again. Released after a success or a refusal; not after any other
 * failure, which may be an append that still lands (a store's deadline passed): such a reservation
 * is taken over once its grace period is past, if the profile does not carry it.
 */
abstract class SlugAwareHandler {
  constructor(
    protected readonly profiles: RecordWriter,
    protected readonly slugs: SlugReservations,
  ) {}

  /** Returns what the write did, once its slug is known to be the profile's (see Written). */
  protected async writeWithSlugs(id: string, write: SlugWrite, command: ProfileCommand): Promise<Written> {
    const decide = (state: RecordState | null) => profileDecider.decide(command, state);
    const metadata = eventMetadata(write.context, write.commandId);
    const touched = new Set<string>();
    // This command's appends follow one another, so the last one made is the latest.
    let lastAppended: Position | undefined;
    let outcomeKnown = false;
    try {
      for (let attempt = 1; ; attempt++) {
        // Step 1.
        const plan = await this.reserveSlug(id, write, decide, metadata, attempt > 1);
        if (plan.reservedAt) {
          touched.add(plan.slug!);
          lastAppended = plan.reservedAt;
        }
        // Step 2. The decision appended: the state it was made on, its changes, and the slug it took.
        let decided: { before: RecordState | null; changes: Fields; taken?: string } | undefined;
        let written: Written;
        try {
          written = await this.profiles.write(
            id,
            write.context,
            write.commandId,
            (state) => {
              const events = decide(state);
              const { taken, givenUp } = slugChange(state, events);
              if (taken && revisionOf(state) !== plan.revision) throw new SlugPlanOutdated();
              // Thrown here, not in step 1, so that the writer answers it as any refusal (404 for a profile being erased).
              if (taken && plan.refused) throw plan.refused;
              if (givenUp) touched.add(givenUp);
              decided = { before: state, changes: events[0]?.data ?? {}, taken };
              return events;
            },
            { precondition: write.precondition, isNew: write.isNew },
          );
        } catch (error) {
          if (!(error instanceof SlugPlanOutdated)) throw error;
          if (attempt === MAX_PLANS) throw new ApiError('CONFLICT', 'The profile is being changed by others right now; try again.');
          continue;
        }
        const { appended } = written;
        if (appended) lastAppended = appended.position;
        // Step 3.
        if (appended && decided?.taken && !(await this.slugs.holds(decided.taken, id))) {
          lastAppended = await this.undo(id, write.context, metadata, decided.before, decided.changes);
          throw slugTaken(decided.taken);
        }
        outcomeKnown = true;
        return written;
      }
    } catch (error) {
      outcomeKnown = error instanceof ApiError;
      throw error;
    } finally {
      if (outcomeKnown && lastAppended) for (const slug of touched) await this.slugs.release(slug, id, metadata, lastAppended);
    }
  }

  /**
   * Step 1: decides ahead and reserves the slug the decision takes. A reservation refused on a guess
   * is decided again on the stream as read, as the writer does with a refusal: the guess may be out
   * of date (an idempotent retry's create finds its profile there). Refused on the stream as read,
   * the refusal is the write's to answer (step 2).
   */
  private async reserveSlug(id: string, write: SlugWrite, decide: Decision<ProfileEvent>, metadata: NewEventMetadata, fresh: boolean): Promise<SlugPlan> {
    const { precondition, isNew } = write;
    const { state, events, guessed } = await this.profiles.decideAhead(id, write.context, decide, { precondition, isNew, fresh });
    const plan: SlugPlan = { revision: revisionOf(state), slug: slugChange(state, events).taken };
    if (!plan.slug) return plan;
    try {
      return { ...plan, reservedAt: await this.slugs.reserve(plan.slug, id, metadata) };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (guessed) return this.reserveSlug(id, write, decide, metadata, true);
      return { ...plan, refused: error };
    }
  }

  /**
   * Undoes a write whose slug another profile took over: a create by deleting the profile, an
   * update by setting back what it changed. The slug it had before is reserved again first: since
   * the write the profile did not carry it, so another may have taken it over meanwhile, and then
   * the undo leaves the profile with no slug. Returns the undoing append's position.
   */
  private async undo(
    id: string,
    context: CommandContext,
    metadata: NewEventMetadata,
    before: RecordState | null,
    changes: Fields,
  ): Promise<Position | undefined> {
    const previous = Object.fromEntries(Object.keys(changes).map((field) => [field, before?.fields[field] ?? '']));
    if (previous.slug) {
      const kept = await this.slugs.reserve(previous.slug, id, metadata).then(
        () => true,
        (error) => {
          if (error instanceof ApiError && error.code === 'CONFLICT') return false;
          throw error;
        },
      );
      if (!kept) previous.slug = '';
    }
    const { accountId } = context;
    const undoing: ProfileCommand = before ? { type: 'UpdateProfile', data: { accountId, fields: previous } } : { type: 'DeleteProfile', data: { accountId } };
    const { appended } = await this.profiles.write(id, context, randomUUID(), (state) => profileDecider.decide(undoing, state));
    return appended?.position;
  }
}

/** What a profile write is asked with, besides its command. */
interface SlugWrite {
  context: CommandContext;
  commandId: string;
  precondition?: Precondition;
  isNew?: boolean;
}

@CommandHandler(CreateProfileCommand)
export class CreateProfileHandler extends SlugAwareHandler implements ICommandHandler<CreateProfileCommand, RecordState> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: CreateProfileCommand): Promise<RecordState> {
    const { context, commandId, id, fields } = command;
    const written = await this.writeWithSlugs(id, { context, commandId, isNew: true }, { type: 'CreateProfile', data: { fields } });
    return this.profiles.created(id, written, context.accountId);
  }
}

@CommandHandler(UpdateProfileCommand)
export class UpdateProfileHandler extends SlugAwareHandler implements ICommandHandler<UpdateProfileCommand, RecordState> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: UpdateProfileCommand): Promise<RecordState> {
    const { context, id, fields } = command;
    const { record } = await this.writeWithSlugs(id, command, { type: 'UpdateProfile', data: { accountId: context.accountId, fields } });
    return record!; // an update decides on a profile that exists
  }
}

@CommandHandler(DeleteProfileCommand)
export class DeleteProfileHandler extends SlugAwareHandler implements ICommandHandler<DeleteProfileCommand, void> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: DeleteProfileCommand): Promise<void> {
    // Deleting gives the slug up (slugChange), released once the deletion is appended.
    await this.writeWithSlugs(command.id, command, { type: 'DeleteProfile', data: { accountId: command.context.accountId } });
  }
}

/** Erasure frees the profile's slug: read before its key goes, released once the erasure is appended. */
@CommandHandler(EraseProfileCommand)
export class EraseProfileHandler implements ICommandHandler<EraseProfileCommand, void> {
  constructor(
    @Inject(PROFILE_ERASER) private readonly eraser: RecordEraser,
    private readonly slugs: SlugReservations,
  ) {}

  async execute({ context, id, commandId }: EraseProfileCommand): Promise<void> {
    await this.eraser.erase(id, context, commandId, async (before) => {
      if (before.fields.slug) await this.slugs.release(before.fields.slug, id, eventMetadata(context, commandId));
    });
  }
}
