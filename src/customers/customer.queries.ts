import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { notFound } from '../errors';
import type { ListQuery } from '../http/list-query';
import { READ_STORE, ReadStore } from '../read-store/read-store.port';
import { customerProjection } from './customer.projection';
import { customerView, CustomerViewShape } from './customer.view';

const COLLECTION = customerProjection.schema.name;

export type CustomerView = ReturnType<typeof customerView>;

export class GetCustomerQuery extends Query<CustomerView> {
  constructor(readonly accountId: string, readonly id: string, readonly shape: CustomerViewShape) {
    super();
  }
}

export class ListCustomersQuery extends Query<{ customers: CustomerView[]; total: number }> {
  constructor(readonly accountId: string, readonly list: ListQuery) {
    super();
  }
}

@QueryHandler(GetCustomerQuery)
export class GetCustomerHandler implements IQueryHandler<GetCustomerQuery, CustomerView> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  async execute({ accountId, id, shape }: GetCustomerQuery): Promise<CustomerView> {
    const customer = await this.readStore.get(COLLECTION, accountId, id);
    if (!customer) throw notFound('Customer');
    return customerView(customer, shape);
  }
}

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery, { customers: CustomerView[]; total: number }> {
  constructor(@Inject(READ_STORE) private readonly readStore: ReadStore) {}

  async execute({ accountId, list }: ListCustomersQuery) {
    const { documents, total } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
    return { customers: documents.map((c) => customerView(c, 'short')), total };
  }
}
