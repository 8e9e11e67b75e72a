import { Inject } from '@nestjs/common';
import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../http/request-context';
import type { Fields } from '../records/record';
import { RecordWriter } from '../records/record-writer';
import { decideCreateCustomer, decideDeleteCustomer, decideUpdateCustomer } from './customer.decider';

export const CUSTOMER_WRITER = Symbol('CustomerWriter');

export class CreateCustomerCommand extends Command<string> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly fields: Fields) {
    super();
  }
}

export class UpdateCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string, readonly fields: Fields) {
    super();
  }
}

export class DeleteCustomerCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(readonly context: RequestContext, readonly id: string) {
    super();
  }
}

@CommandHandler(CreateCustomerCommand)
export class CreateCustomerHandler implements ICommandHandler<CreateCustomerCommand, string> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, fields, commandId }: CreateCustomerCommand): Promise<string> {
    const id = randomUUID();
    await this.customers.write(id, context, commandId, (state) => decideCreateCustomer(state, fields));
    return id;
  }
}

@CommandHandler(UpdateCustomerCommand)
export class UpdateCustomerHandler implements ICommandHandler<UpdateCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, fields, commandId }: UpdateCustomerCommand): Promise<void> {
    await this.customers.write(id, context, commandId, (state) => decideUpdateCustomer(state, context.accountId, fields));
  }
}

@CommandHandler(DeleteCustomerCommand)
export class DeleteCustomerHandler implements ICommandHandler<DeleteCustomerCommand, void> {
  constructor(@Inject(CUSTOMER_WRITER) private readonly customers: RecordWriter) {}

  async execute({ context, id, commandId }: DeleteCustomerCommand): Promise<void> {
    await this.customers.write(id, context, commandId, (state) => decideDeleteCustomer(state, context.accountId));
  }
}
