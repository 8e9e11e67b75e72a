import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import type { CommandContext } from '../records/command-context';
import type { Fields, RecordState } from '../records/record';
import { eventMetadata, Precondition, RecordWriter } from '../records/record-writer';
import { SlugReservations } from './slug-reservations';
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

/**
 * Each handler hands profileDecider (profile.decider.ts) its own command, written through the slug
 * claim (SlugClaim in slug-reservations.ts): profiles' slugs are unique across the service.
 */
@CommandHandler(CreateProfileCommand)
export class CreateProfileHandler implements ICommandHandler<CreateProfileCommand, RecordState> {
  constructor(
    @Inject(PROFILE_WRITER) private readonly profiles: RecordWriter,
    private readonly slugs: SlugReservations,
  ) {}

  async execute({ context, commandId, id, fields }: CreateProfileCommand): Promise<RecordState> {
    const written = await this.slugs.write({ id, context, commandId, command: { type: 'CreateProfile', data: { fields } }, isNew: true });
    return this.profiles.created(id, written, context.accountId);
  }
}

@CommandHandler(UpdateProfileCommand)
export class UpdateProfileHandler implements ICommandHandler<UpdateProfileCommand, RecordState> {
  constructor(private readonly slugs: SlugReservations) {}

  async execute({ context, commandId, id, fields, precondition }: UpdateProfileCommand): Promise<RecordState> {
    const command = { type: 'UpdateProfile', data: { accountId: context.accountId, fields } } as const;
    const { record } = await this.slugs.write({ id, context, commandId, command, precondition });
    return record!; // an update decides on a profile that exists
  }
}

@CommandHandler(DeleteProfileCommand)
export class DeleteProfileHandler implements ICommandHandler<DeleteProfileCommand, void> {
  constructor(private readonly slugs: SlugReservations) {}

  async execute({ context, commandId, id, precondition }: DeleteProfileCommand): Promise<void> {
    // Deleting gives the slug up (slugChange), released once the deletion is appended.
    await this.slugs.write({ id, context, commandId, command: { type: 'DeleteProfile', data: { accountId: context.accountId } }, precondition });
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
