import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { notFound } from '../errors';
import type { ListQuery } from '../http/list-query';
import { FindResult, READ_STORE, ReadStore } from '../read-store/read-store.port';
import type { RecordState } from '../records/record';
import { customerProjection } from './customer.projection';

const COLLECTION = customerProjection.schema.name;

export class GetCustomerQuery extends Query<RecordState> {
  constructor(readonly accountId: string, readonly id: string) {
    super();
  }
}

export class ListCustomersQuery extends Query<FindResult> {
  constructor(readonly accountId: string, readonly list: ListQuery) {
    super();
  }
}

@QueryHandler(GetCustomerQuery)
export class GetCustomerHandler implements IQueryHandler<GetCustomerQuery, RecordState> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  async execute({ accountId, id }: GetCustomerQuery): Promise<RecordState> {
    const customer = await this.readStore.get(COLLECTION, accountId, id);
    if (!customer) throw notFound('Customer');
    return customer;
  }
}

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery, FindResult> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  execute({ accountId, list }: ListCustomersQuery): Promise<FindResult> {
    return this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
  }
}
