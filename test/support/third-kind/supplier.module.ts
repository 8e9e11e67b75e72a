import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Logger, Module, OnApplicationBootstrap, Param, Post, Put, Query, Res } from '@nestjs/common';
import { Command, CommandBus, CommandHandler, ICommandHandler, IQueryHandler, Query as CqrsQuery, QueryBus, QueryHandler } from '@nestjs/cqrs';
import type { Response } from 'express';
import { randomUUID } from 'node:crypto';
import { RecordAsOfQuery, RecordHistoryQuery } from '../../../src/audit/audit.queries';
import { APP_CONFIG, AppConfig } from '../../../src/config/config';
import { ApiRecordOperation, ApiResource } from '../../../src/docs/openapi';
import { notFound } from '../../../src/errors';
import { EVENT_STORE, EventStore } from '../../../src/event-store/event-store.port';
import { inAccountTurn } from '../../../src/http/account-turns';
import { toFields } from '../../../src/http/body-validation.pipe';
import { envelope } from '../../../src/http/envelope';
import { parseIfMatch, setETag } from '../../../src/http/etag';
import { type ListQuery, nextCursor, parseAsOf, parseListQuery, setListHeaders } from '../../../src/http/list-query';
import { RecordIdPipe } from '../../../src/http/record-id.pipe';
import { Ctx } from '../../../src/http/request-context';
import { IdempotentCreates } from '../../../src/idempotency/idempotent-creates';
import { ProjectionsService } from '../../../src/projections/projections.service';
import { READ_STORE, ReadStore } from '../../../src/read-store/read-store.port';
import type { CommandContext } from '../../../src/records/command-context';
import { getUnlessErased, withoutErased } from '../../../src/records/erased-records';
import type { Fields, RecordState } from '../../../src/records/record';
import { RecordEraser } from '../../../src/records/record-eraser';
import { Precondition, RecordWriter } from '../../../src/records/record-writer';
import { DATA_KEYS, type DataKeys } from '../../../src/sealing/data-keys';
import { CreateSupplierBody, SUPPLIER, SUPPLIER_API, SupplierCommand, supplierDecider, supplierProjection, supplierView, UpdateSupplierBody } from './supplier';

/**
 * /v1/suppliers: commands, queries, controller and module, as customers/ has them, on the shared
 * kernel's public surface (RecordWriter.write/created, RecordEraser.erase, the history and as-of queries).
 */

const WRITER = Symbol('SupplierWriter');
const ERASER = Symbol('SupplierEraser');
const COLLECTION = supplierProjection.schema.name;
const FILTERS = Object.keys(supplierProjection.schema.filters);

class WriteSupplierCommand extends Command<RecordState | null> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
    readonly command: SupplierCommand,
    readonly options: { isNew?: boolean; precondition?: Precondition } = {},
  ) {
    super();
  }
}

class EraseSupplierCommand extends Command<void> {
  readonly commandId = randomUUID();
  constructor(
    readonly context: CommandContext,
    readonly id: string,
  ) {
    super();
  }
}

@CommandHandler(WriteSupplierCommand)
class WriteSupplierHandler implements ICommandHandler<WriteSupplierCommand, RecordState | null> {
  constructor(@Inject(WRITER) private readonly suppliers: RecordWriter) {}

  async execute({ context, id, command, options, commandId }: WriteSupplierCommand): Promise<RecordState | null> {
    const written = await this.suppliers.write(id, context, commandId, (state) => supplierDecider.decide(command, state), options);
    return options.isNew ? this.suppliers.created(id, written, context.accountId) : written.record;
  }
}

@CommandHandler(EraseSupplierCommand)
class EraseSupplierHandler implements ICommandHandler<EraseSupplierCommand, void> {
  constructor(@Inject(ERASER) private readonly eraser: RecordEraser) {}

  async execute({ context, id, commandId }: EraseSupplierCommand): Promise<void> {
    await this.eraser.erase(id, context, commandId);
  }
}

class GetSupplierQuery extends CqrsQuery<RecordState> {
  constructor(
    readonly accountId: string,
    readonly id: string,
    readonly asOf?: number,
  ) {
    super();
  }
}

class ListSuppliersQuery extends CqrsQuery<{ suppliers: RecordState[]; total: number; capped: boolean; next?: string }> {
  constructor(
    readonly accountId: string,
    readonly list: ListQuery,
  ) {
    super();
  }
}

@QueryHandler(GetSupplierQuery)
class GetSupplierHandler implements IQueryHandler<GetSupplierQuery, RecordState> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly queries: QueryBus,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  async execute({ accountId, id, asOf }: GetSupplierQuery): Promise<RecordState> {
    this.projections.assertCaughtUp(COLLECTION);
    const supplier =
      asOf === undefined
        ? await getUnlessErased(this.readStore, this.keys, SUPPLIER, COLLECTION, accountId, id)
        : await this.queries.execute(new RecordAsOfQuery(SUPPLIER, accountId, id, asOf));
    if (!supplier) throw notFound('Supplier');
    return supplier;
  }
}

@QueryHandler(ListSuppliersQuery)
class ListSuppliersHandler implements IQueryHandler<ListSuppliersQuery> {
  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadStore,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  async execute({ accountId, list }: ListSuppliersQuery) {
    this.projections.assertCaughtUp(COLLECTION);
    const { documents, total, capped } = await this.readStore.find(COLLECTION, { accountId, ...list, order: 'newest' });
    return { suppliers: await withoutErased(this.keys, SUPPLIER, documents), total, capped, next: nextCursor(documents, list.limit) };
  }
}

const SupplierId = new RecordIdPipe('Supplier');

@ApiResource(SUPPLIER_API)
@Controller('v1/suppliers')
class SuppliersController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotentCreates: IdempotentCreates,
  ) {}

  @Post()
  @ApiRecordOperation(SUPPLIER_API, 'create')
  @HttpCode(201)
  async create(
    @Ctx() ctx: CommandContext,
    @Body() body: CreateSupplierBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const fields: Fields = toFields(body);
    const created = await this.idempotentCreates.run(ctx, idempotencyKey, { kind: SUPPLIER, fields }, async (id) => {
      const supplier = (await this.commands.execute(new WriteSupplierCommand(ctx, id, { type: 'CreateSupplier', data: { fields } }, { isNew: true })))!;
      return { body: envelope({ Supplier: supplierView(supplier) }, 201), revision: supplier.revision };
    });
    setETag(res, created.revision);
    return created.body;
  }

  @Get()
  @ApiRecordOperation(SUPPLIER_API, 'list')
  async list(@Ctx() ctx: CommandContext, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response) {
    const list = parseListQuery(query, FILTERS, 10, { cursor: true });
    const { suppliers, ...page } = await inAccountTurn(ctx.accountId, () => this.queries.execute(new ListSuppliersQuery(ctx.accountId, list)));
    setListHeaders(res, page);
    return envelope(
      suppliers.map((s) => ({ Supplier: supplierView(s) })),
      200,
    );
  }

  @Get(':id')
  @ApiRecordOperation(SUPPLIER_API, 'read')
  async read(
    @Ctx() ctx: CommandContext,
    @Param('id', SupplierId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const supplier = await this.queries.execute(new GetSupplierQuery(ctx.accountId, id, parseAsOf(query)));
    setETag(res, supplier.revision);
    return envelope([{ Supplier: supplierView(supplier) }], 200);
  }

  @Get(':id/history')
  @ApiRecordOperation(SUPPLIER_API, 'history')
  async history(
    @Ctx() ctx: CommandContext,
    @Param('id', SupplierId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { entries, total } = await this.queries.execute(new RecordHistoryQuery(SUPPLIER, ctx.accountId, id, parseListQuery(query, [], 100)));
    res.setHeader('X-Total-Count', String(total));
    return envelope(entries, 200);
  }

  @Put(':id')
  @ApiRecordOperation(SUPPLIER_API, 'update')
  @HttpCode(200)
  async update(
    @Ctx() ctx: CommandContext,
    @Param('id', SupplierId) id: string,
    @Body() body: UpdateSupplierBody,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const update: SupplierCommand = { type: 'UpdateSupplier', data: { accountId: ctx.accountId, fields: toFields(body) } };
    const supplier = (await this.commands.execute(new WriteSupplierCommand(ctx, id, update, { precondition: parseIfMatch(ifMatch) })))!;
    setETag(res, supplier.revision);
    return envelope({ Supplier: supplierView(supplier) }, 201);
  }

  @Delete(':id')
  @ApiRecordOperation(SUPPLIER_API, 'delete')
  @HttpCode(200)
  async remove(@Ctx() ctx: CommandContext, @Param('id', SupplierId) id: string, @Headers('if-match') ifMatch: string | undefined) {
    const remove: SupplierCommand = { type: 'DeleteSupplier', data: { accountId: ctx.accountId } };
    await this.commands.execute(new WriteSupplierCommand(ctx, id, remove, { precondition: parseIfMatch(ifMatch) }));
    return envelope({ Supplier: { id } }, 200, 'Supplier deleted successfully.');
  }

  @Post(':id/erase')
  @ApiRecordOperation(SUPPLIER_API, 'erase')
  @HttpCode(200)
  async erase(@Ctx() ctx: CommandContext, @Param('id', SupplierId) id: string) {
    await this.commands.execute(new EraseSupplierCommand(ctx, id));
    return envelope({ Supplier: { id } }, 200, 'Supplier erased.');
  }
}

@Module({
  controllers: [SuppliersController],
  providers: [
    IdempotentCreates,
    {
      provide: WRITER,
      useFactory: (eventStore: EventStore, projections: ProjectionsService, keys: DataKeys, config: AppConfig) =>
        new RecordWriter(SUPPLIER, eventStore, projections, keys, { keepAtMost: config.recordCacheSize }),
      inject: [EVENT_STORE, ProjectionsService, DATA_KEYS, APP_CONFIG],
    },
    {
      provide: ERASER,
      useFactory: (writer: RecordWriter, keys: DataKeys, readStore: ReadStore) => new RecordEraser(SUPPLIER, COLLECTION, writer, keys, readStore),
      inject: [WRITER, DATA_KEYS, READ_STORE],
    },
    WriteSupplierHandler,
    EraseSupplierHandler,
    GetSupplierHandler,
    ListSuppliersHandler,
  ],
})
export class SuppliersModule implements OnApplicationBootstrap {
  constructor(@Inject(ERASER) private readonly eraser: RecordEraser) {}

  /** Erasures a stop interrupted are finished before the service answers, as every kind's module does. */
  async onApplicationBootstrap(): Promise<void> {
    await this.eraser
      .finishPending()
      .catch((error) => new Logger('SuppliersModule').error(`Could not finish interrupted erasures: ${(error as Error).message}`));
  }
}
