import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryBus, QueryHandler } from '@nestjs/cqrs';
import { RecordAsOfQuery } from '../audit/audit.queries';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { getUnlessErased, withoutErased } from '../records/erased-records';
import { notFound } from '../errors';
import { type ListQuery, nextCursor } from '../http/list-query';
import { ProjectionsService } from '../projections/projections.service';
import { READ_STORE, ReadDocuments } from '../read-store/read-store.port';
import type { Versioned } from '../records/record';
import { CUSTOMER } from './customer.decider';
import { customerProjection } from './customer.projection';
import { customerView } from './customer.view';

const COLLECTION = customerProjection.schema.name;

export type CustomerView = ReturnType<typeof customerView>;

/** One customer as it is now, or as it stood at `asOf` (epoch seconds). */
export class GetCustomerQuery extends Query<Versioned<CustomerView>> {
  constructor(
    readonly accountId: string,
    readonly id: string,
    readonly asOf?: number,
  ) {
    super();
  }
}

export class ListCustomersQuery extends Query<{ customers: CustomerView[]; total: number; capped: boolean; next?: string }> {
  constructor(
    readonly accountId: string,
    readonly list: ListQuery,
  ) {
    super();
  }
}

@QueryHandler(GetCustomerQuery)
export class GetCustomerHandler implements IQueryHandler<GetCustomerQuery, Versioned<CustomerView>> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    private readonly queries: QueryBus,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  async execute({ accountId, id, asOf }: GetCustomerQuery): Promise<Versioned<CustomerView>> {
    this.projections.assertCaughtUp(COLLECTION);
    const customer =
      asOf === undefined
        ? await getUnlessErased(this.readStore, this.keys, CUSTOMER, COLLECTION, accountId, id)
        : await this.queries.execute(new RecordAsOfQuery(CUSTOMER, accountId, id, asOf));
    if (!customer) throw notFound('Customer');
    return { view: customerView(customer, 'short'), revision: customer.revision };
  }
}

@QueryHandler(ListCustomersQuery)
export class ListCustomersHandler implements IQueryHandler<ListCustomersQuery, { customers: CustomerView[]; total: number; capped: boolean; next?: string }> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  async execute({ accountId, list }: ListCustomersQuery) {
    this.projections.assertCaughtUp(COLLECTION);
    const { documents, total, capped } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
    const shown = await withoutErased(this.keys, CUSTOMER, documents);
    return { customers: shown.map((c) => customerView(c, 'short')), total, capped, next: nextCursor(documents, list.limit) };
  }
}
