import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import { RecordHistoryQuery } from '../audit/audit.queries';
import { ApiRecordOperation, ApiResource } from '../docs/openapi';
import { toFields } from '../http/body-validation.pipe';
import { envelope } from '../http/envelope';
import { parseIfMatch, setETag } from '../http/etag';
import { inAccountTurn } from '../http/account-turns';
import { parseAsOf, parseListQuery, setListHeaders } from '../http/list-query';
import { RecordIdPipe } from '../http/record-id.pipe';
import { Ctx } from '../http/request-context';
import type { CommandContext } from '../records/command-context';
import { IdempotentCreates } from '../idempotency/idempotent-creates';
import { CUSTOMER_API } from './customer.api';
import { CreateCustomerBody, UpdateCustomerBody } from './customer.body';
import { CreateCustomerCommand, DeleteCustomerCommand, EraseCustomerCommand, UpdateCustomerCommand } from './customer.commands';
import { CUSTOMER } from './customer.decider';
import { CUSTOMER_FILTERS } from './customer.projection';
import { GetCustomerQuery, ListCustomersQuery } from './customer.queries';
import { customerView } from './customer.view';

const CustomerId = new RecordIdPipe('Customer');

@ApiResource(CUSTOMER_API)
@Controller('v1/customers')
export class CustomersController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotentCreates: IdempotentCreates,
  ) {}

  @Post()
  @ApiRecordOperation(CUSTOMER_API, 'create')
  @HttpCode(201)
  async create(
    @Ctx() ctx: CommandContext,
    @Body() body: CreateCustomerBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const fields = toFields(body);
    const created = await this.idempotentCreates.run(ctx, idempotencyKey, { kind: CUSTOMER, fields }, async (id) => {
      // Its own outcome, not read back, as an update's.
      const customer = await this.commands.execute(new CreateCustomerCommand(ctx, id, fields));
      return { body: envelope({ Customer: customerView(customer, 'full') }, 201), revision: customer.revision };
    });
    setETag(res, created.revision);
    return created.body;
  }

  @Get()
  @ApiRecordOperation(CUSTOMER_API, 'list')
  async list(@Ctx() ctx: CommandContext, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response) {
    const list = parseListQuery(query, CUSTOMER_FILTERS, 10, { cursor: true });
    const { customers, ...page } = await inAccountTurn(ctx.accountId, () => this.queries.execute(new ListCustomersQuery(ctx.accountId, list)));
    setListHeaders(res, page);
    return envelope(
      customers.map((c) => ({ Customer: c })),
      200,
    );
  }

  /** `?as_of=<epoch seconds>`: the customer as it stood then, folded from its events. */
  @Get(':id')
  @ApiRecordOperation(CUSTOMER_API, 'read')
  async read(
    @Ctx() ctx: CommandContext,
    @Param('id', CustomerId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { view, revision } = await this.queries.execute(new GetCustomerQuery(ctx.accountId, id, parseAsOf(query)));
    setETag(res, revision);
    return envelope([{ Customer: view }], 200);
  }

  @Get(':id/history')
  @ApiRecordOperation(CUSTOMER_API, 'history')
  async history(
    @Ctx() ctx: CommandContext,
    @Param('id', CustomerId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { entries, total } = await this.queries.execute(new RecordHistoryQuery(CUSTOMER, ctx.accountId, id, parseListQuery(query, [], 100)));
    res.setHeader('X-Total-Count', String(total));
    return envelope(entries, 200);
  }

  /** HTTP 200 with body status 201, as the interface's example answers. */
  @Put(':id')
  @ApiRecordOperation(CUSTOMER_API, 'update')
  @HttpCode(200)
  async update(
    @Ctx() ctx: CommandContext,
    @Param('id', CustomerId) id: string,
    @Body() body: UpdateCustomerBody,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    // Its own outcome, not read back: by now the read model may show another worker's later delete or erasure.
    const customer = await this.commands.execute(new UpdateCustomerCommand(ctx, id, toFields(body), parseIfMatch(ifMatch)));
    setETag(res, customer.revision);
    return envelope({ Customer: customerView(customer, 'short') }, 201);
  }

  @Delete(':id')
  @ApiRecordOperation(CUSTOMER_API, 'delete')
  @HttpCode(200)
  async remove(@Ctx() ctx: CommandContext, @Param('id', CustomerId) id: string, @Headers('if-match') ifMatch: string | undefined) {
    await this.commands.execute(new DeleteCustomerCommand(ctx, id, parseIfMatch(ifMatch)));
    return envelope({ Customer: { id } }, 200, 'Customer deleted successfully.');
  }

  /** Erases the customer's personal data for good: a live or a deleted one; again, the same answer. */
  @Post(':id/erase')
  @ApiRecordOperation(CUSTOMER_API, 'erase')
  @HttpCode(200)
  async erase(@Ctx() ctx: CommandContext, @Param('id', CustomerId) id: string) {
    await this.commands.execute(new EraseCustomerCommand(ctx, id));
    return envelope({ Customer: { id } }, 200, 'Customer erased.');
  }
}
