import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors';
import type { EventMetadata, Position } from '../event-store/event-store.port';
import type { RequestContext } from '../http/request-context';
import type { Fields, RecordState } from '../records/record';
import { Decision, eventMetadata, Precondition, RecordWriter } from '../records/record-writer';
import { decideCreateProfile, decideDeleteProfile, decideUpdateProfile, slugKey } from './profile.decider';
import { SlugReservations, slugTaken } from './slug-reservations';
import type { RecordEraser } from '../erasure/record-eraser';

export const PROFILE_WRITER = Symbol('ProfileWriter');
export const PROFILE_ERASER = Symbol('ProfileEraser');

/** `id` is new, or the one an Idempotency-Key claimed: creating it again appends nothing. */
export class CreateProfileCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string, readonly fields: Fields) {
    super();
  }
}

/** Answers the profile as the update left it. */
export class UpdateProfileCommand extends Command<RecordState> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: RequestContext,
    readonly id: string,
    readonly fields: Fields,
    readonly precondition?: Precondition,
  ) {
    super();
  }
}

export class DeleteProfileCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string, readonly precondition?: Precondition) {
    super();
  }
}

export class EraseProfileCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string) {
    super();
  }
}

/**
 * A profile write that may take or give up slugs: the new slug is reserved before the profile's
 * event is appended, and afterwards every slug the write touched is released unless the profile
 * carries it, or a write after this one reserved it again. Released after a success or a refusal;
 * not after any other failure, which may be an append that still lands (a store's deadline passed):
 * such a reservation is taken over once its grace period is past, if the profile does not carry it.
 * A write whose reservation was taken over while its append was on its way (a slow append) is
 * undone and answered 409, so that no two profiles carry one slug.
 */
abstract class SlugAwareHandler {
  constructor(
    protected readonly profiles: RecordWriter,
    protected readonly slugs: SlugReservations,
  ) {}

  /** Returns the profile as the write left it (null after a create: see Written). */
  protected async writeWithSlugs(
    id: string,
    command: { context: RequestContext; commandId: string; precondition?: Precondition; isNew?: boolean },
    decide: Decision,
    newSlug: (current: Fields) => string | undefined,
  ): Promise<RecordState | null> {
    const metadata = eventMetadata(command.context, command.commandId);
    const touched = new Set<string>();
    // This command's appends follow one another, so the last one made is the latest.
    let lastAppended: Position | undefined;
    let outcomeKnown = false;
    // The decision appended: the state it was made on, its changes, and the slug it reserved.
    let decided: { before: RecordState | null; changes: Fields; reserved?: string } | undefined;
    try {
      const { appended, record } = await this.profiles.write(id, command.context, command.commandId, async (state) => {
        const events = await decide(state);
        const current = state?.fields ?? {};
        const next = events.length ? newSlug(current) : undefined;
        decided = { before: state, changes: (events[0]?.data ?? {}) as Fields };
        if (next !== undefined && slugKey(next) !== slugKey(current.slug ?? '')) {
          if (current.slug) touched.add(current.slug);
          if (next) {
            touched.add(next);
            lastAppended = await this.slugs.reserve(next, id, metadata);
            decided.reserved = next;
          }
        }
        return events;
      }, { precondition: command.precondition, isNew: command.isNew });
      if (appended) lastAppended = appended.position;
      if (appended && decided?.reserved && !(await this.slugs.holds(decided.reserved, id))) {
        lastAppended = await this.undo(id, command.context, metadata, decided.before, decided.changes);
        throw slugTaken(decided.reserved);
      }
      outcomeKnown = true;
      return record;
    } catch (error) {
      outcomeKnown = error instanceof ApiError;
      throw error;
    } finally {
      if (outcomeKnown && lastAppended) for (const slug of touched) await this.slugs.release(slug, id, metadata, lastAppended);
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
    context: RequestContext,
    metadata: EventMetadata,
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
    const { appended } = await this.profiles.write(id, context, randomUUID(), (state) =>
      before ? decideUpdateProfile(state, context.accountId, previous) : decideDeleteProfile(state, context.accountId),
    );
    return appended?.position;
  }
}

@CommandHandler(CreateProfileCommand)
export class CreateProfileHandler extends SlugAwareHandler implements ICommandHandler<CreateProfileCommand, void> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: CreateProfileCommand): Promise<void> {
    const { context, commandId, id, fields } = command;
    await this.writeWithSlugs(id, { context, commandId, isNew: true }, (state) => decideCreateProfile(state, fields), () => fields.slug);
  }
}

@CommandHandler(UpdateProfileCommand)
export class UpdateProfileHandler extends SlugAwareHandler implements ICommandHandler<UpdateProfileCommand, RecordState> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: UpdateProfileCommand): Promise<RecordState> {
    const { context, id, fields } = command;
    const record = await this.writeWithSlugs(id, command, (state) => decideUpdateProfile(state, context.accountId, fields), () => fields.slug);
    return record!; // an update decides on a profile that exists
  }
}

@CommandHandler(DeleteProfileCommand)
export class DeleteProfileHandler extends SlugAwareHandler implements ICommandHandler<DeleteProfileCommand, void> {
  constructor(@Inject(PROFILE_WRITER) profiles: RecordWriter, slugs: SlugReservations) {
    super(profiles, slugs);
  }

  async execute(command: DeleteProfileCommand): Promise<void> {
    // Deleting gives the slug up: '' stands for "no slug" here.
    await this.writeWithSlugs(command.id, command, (state) => decideDeleteProfile(state, command.context.accountId), () => '');
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
