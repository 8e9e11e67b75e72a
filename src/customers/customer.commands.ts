import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../http/request-context';
import type { Fields, RecordState } from '../records/record';
import { Precondition, RecordWriter } from '../records/record-writer';
import type { RecordEraser } from '../erasure/record-eraser';
import { decideCreateCustomer, decideDeleteCustomer, decideUpdateCustomer } from './customer.decider';

export const CUSTOMER_WRITER = Symbol('CustomerWriter');
export const CUSTOMER_ERASER = Symbol('CustomerEraser');

/** `id` is new, or the one an Idempotency-Key claimed: creating it again appends nothing. */
export class CreateCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string, readonly fields: Fields) {
    super();
  }
}

/** Answers the customer as the update left it. */
export class UpdateCustomerCommand extends Command<RecordState> {
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

export class DeleteCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string, readonly precondition?: Precondition) {
    super();
  }
}

export class EraseCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string) {
    super();
  }
}

@CommandHandler(CreateCustomerCommand)
export class CreateCustomerHandler implements ICommandHandler<CreateCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, fields, commandId }: CreateCustomerCommand): Promise<void> {
    await this.customers.write(id, context, commandId, (state) => decideCreateCustomer(state, fields), { isNew: true });
  }
}

@CommandHandler(UpdateCustomerCommand)
export class UpdateCustomerHandler implements ICommandHandler<UpdateCustomerCommand, RecordState> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, fields, commandId, precondition }: UpdateCustomerCommand): Promise<RecordState> {
    const { record } = await this.customers.write(id, context, commandId, (state) => decideUpdateCustomer(state, context.accountId, fields), {
      precondition,
    });
    return record!; // an update decides on a record that exists
  }
}

@CommandHandler(DeleteCustomerCommand)
export class DeleteCustomerHandler implements ICommandHandler<DeleteCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, commandId, precondition }: DeleteCustomerCommand): Promise<void> {
    await this.customers.write(id, context, commandId, (state) => decideDeleteCustomer(state, context.accountId), { precondition });
  }
}

@CommandHandler(EraseCustomerCommand)
export class EraseCustomerHandler implements ICommandHandler<EraseCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_ERASER) private readonly eraser: RecordEraser) {}

  async execute({ context, id, commandId }: EraseCustomerCommand): Promise<void> {
    await this.eraser.erase(id, context, commandId);
  }
}
