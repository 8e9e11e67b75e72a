import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import { ApiRecordOperation, ApiResource } from '../docs/openapi';
import { toFields } from '../http/body-validation.pipe';
import { envelope } from '../http/envelope';
import { parseListQuery } from '../http/list-query';
import { RecordIdPipe } from '../http/record-id.pipe';
import { Ctx, RequestContext } from '../http/request-context';
import { ProfileBody } from './profile.body';
import { CreateProfileCommand, DeleteProfileCommand, UpdateProfileCommand } from './profile.commands';
import { PROFILE_FILTERS } from './profile.projection';
import { GetProfileQuery, ListProfilesQuery } from './profile.queries';

const ProfileId = new RecordIdPipe('Profile');

@ApiResource('Profile')
@Controller('v1/profiles')
export class ProfilesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @ApiRecordOperation('Profile', 'create')
  @HttpCode(201)
  async create(@Ctx() ctx: RequestContext, @Body() body: ProfileBody) {
    const id = await this.commands.execute(new CreateProfileCommand(ctx, toFields(body)));
    return envelope({ Profile: await this.queries.execute(new GetProfileQuery(ctx.accountId, id)) }, 201);
  }

  @Get()
  @ApiRecordOperation('Profile', 'list')
  async list(@Ctx() ctx: RequestContext, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response) {
    const { profiles, total } = await this.queries.execute(
      new ListProfilesQuery(ctx.accountId, parseListQuery(query, PROFILE_FILTERS)),
    );
    res.setHeader('X-Total-Count', String(total));
    return envelope(profiles.map((p) => ({ Profile: p })), 200);
  }

  @Get(':id')
  @ApiRecordOperation('Profile', 'read')
  async read(@Ctx() ctx: RequestContext, @Param('id', ProfileId) id: string) {
    return envelope([{ Profile: await this.queries.execute(new GetProfileQuery(ctx.accountId, id)) }], 200);
  }

  /** HTTP 200 with body status 201, as the interface's example answers. */
  @Put(':id')
  @ApiRecordOperation('Profile', 'update')
  @HttpCode(200)
  async update(@Ctx() ctx: RequestContext, @Param('id', ProfileId) id: string, @Body() body: ProfileBody) {
    await this.commands.execute(new UpdateProfileCommand(ctx, id, toFields(body)));
    return envelope({ Profile: await this.queries.execute(new GetProfileQuery(ctx.accountId, id)) }, 201);
  }

  @Delete(':id')
  @ApiRecordOperation('Profile', 'delete')
  @HttpCode(200)
  async remove(@Ctx() ctx: RequestContext, @Param('id', ProfileId) id: string) {
    await this.commands.execute(new DeleteProfileCommand(ctx, id));
    return envelope({ Profile: { id } }, 200, 'Profile deleted successfully.');
  }
}
