import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import type { CommandContext } from '../records/command-context';
import type { Fields, RecordState } from '../records/record';
import { Precondition, RecordWriter } from '../records/record-writer';
import type { RecordEraser } from '../records/record-eraser';
import { CustomerCommand, customerDecider } from './customer.decider';

export const CUSTOMER_WRITER = Symbol('CustomerWriter');
export const CUSTOMER_ERASER = Symbol('CustomerEraser');

/**
 * The bus's commands carry the request; each handler hands customerDecider (customer.decider.ts) its
 * own command, decided by the writer on the record as it stands when appended.
 */

/** `id` is new, or the one an Idempotency-Key claimed: creating it again appends nothing. Answers the customer as created. */
export class CreateCustomerCommand extends Command<RecordState> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly fields: Fields,
  ) {
    super();
  }
}

/** Answers the customer as the update left it. */
export class UpdateCustomerCommand extends Command<RecordState> {
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

export class DeleteCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly precondition?: Precondition,
  ) {
    super();
  }
}

export class EraseCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
  ) {
    super();
  }
}

@CommandHandler(CreateCustomerCommand)
export class CreateCustomerHandler implements ICommandHandler<CreateCustomerCommand, RecordState> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, fields, commandId }: CreateCustomerCommand): Promise<RecordState> {
    const create: CustomerCommand = { type: 'CreateCustomer', data: { fields } };
    const written = await this.customers.write(id, context, commandId, (state) => customerDecider.decide(create, state), { isNew: true });
    return this.customers.created(id, written, context.accountId);
  }
}

@CommandHandler(UpdateCustomerCommand)
export class UpdateCustomerHandler implements ICommandHandler<UpdateCustomerCommand, RecordState> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, fields, commandId, precondition }: UpdateCustomerCommand): Promise<RecordState> {
    const update: CustomerCommand = { type: 'UpdateCustomer', data: { accountId: context.accountId, fields } };
    const { record } = await this.customers.write(id, context, commandId, (state) => customerDecider.decide(update, state), { precondition });
    return record!; // an update decides on a record that exists
  }
}

@CommandHandler(DeleteCustomerCommand)
export class DeleteCustomerHandler implements ICommandHandler<DeleteCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, commandId, precondition }: DeleteCustomerCommand): Promise<void> {
    const remove: CustomerCommand = { type: 'DeleteCustomer', data: { accountId: context.accountId } };
    await this.customers.write(id, context, commandId, (state) => customerDecider.decide(remove, state), { precondition });
  }
}

@CommandHandler(EraseCustomerCommand)
export class EraseCustomerHandler implements ICommandHandler<EraseCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_ERASER) private readonly eraser: RecordEraser) {}

  async execute({ context, id, commandId }: EraseCustomerCommand): Promise<void> {
    await this.eraser.erase(id, context, commandId);
  }
}
