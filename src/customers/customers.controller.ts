import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import { ApiRecordOperation, ApiResource } from '../docs/openapi';
import { toFields } from '../http/body-validation.pipe';
import { envelope } from '../http/envelope';
import { parseListQuery } from '../http/list-query';
import { RecordIdPipe } from '../http/record-id.pipe';
import { Ctx, RequestContext } from '../http/request-context';
import { CreateCustomerBody, UpdateCustomerBody } from './customer.body';
import { CreateCustomerCommand, DeleteCustomerCommand, UpdateCustomerCommand } from './customer.commands';
import { CUSTOMER_FILTERS } from './customer.projection';
import { GetCustomerQuery, ListCustomersQuery } from './customer.queries';

const CustomerId = new RecordIdPipe('Customer');

@ApiResource('Customer')
@Controller('v1/customers')
export class CustomersController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiRecordOperation('Customer', 'create')
  @HttpCode(201)
  async create(@Ctx() ctx: RequestContext, @Body() body: CreateCustomerBody) {
    const id = await this.commands.execute(new CreateCustomerCommand(ctx, toFields(body)));
    return envelope({ Customer: await this.queries.execute(new GetCustomerQuery(ctx.accountId, id, 'full')) }, 201);
  }

  @Get()
  @ApiRecordOperation('Customer', 'list')
  async list(@Ctx() ctx: RequestContext, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response) {
    const { customers, total } = await this.queries.execute(
      new ListCustomersQuery(ctx.accountId, parseListQuery(query, CUSTOMER_FILTERS)),
    );
    res.setHeader('X-Total-Count', String(total));
    return envelope(customers.map((c) => ({ Customer: c })), 200);
  }

  @Get(':id')
  @ApiRecordOperation('Customer', 'read')
  async read(@Ctx() ctx: RequestContext, @Param('id', CustomerId) id: string) {
    return envelope([{ Customer: await this.queries.execute(new GetCustomerQuery(ctx.accountId, id, 'short')) }], 200);
  }

  /** HTTP 200 with body status 201, as the interface's example answers. */
  @Put(':id')
  @ApiRecordOperation('Customer', 'update')
  @HttpCode(200)
  async update(@Ctx() ctx: RequestContext, @Param('id', CustomerId) id: string, @Body() body: UpdateCustomerBody) {
    await this.commands.execute(new UpdateCustomerCommand(ctx, id, toFields(body)));
    return envelope({ Customer: await this.queries.execute(new GetCustomerQuery(ctx.accountId, id, 'short')) }, 201);
  }

  @Delete(':id')
  @ApiRecordOperation('Customer', 'delete')
  @HttpCode(200)
  async remove(@Ctx() ctx: RequestContext, @Param('id', CustomerId) id: string) {
    await this.commands.execute(new DeleteCustomerCommand(ctx, id));
    return envelope({ Customer: { id } }, 200, 'Customer deleted successfully.');
  }
}
