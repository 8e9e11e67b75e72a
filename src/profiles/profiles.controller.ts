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
import { PROFILE_API } from './profile.api';
import { ProfileBody } from './profile.body';
import { CreateProfileCommand, DeleteProfileCommand, EraseProfileCommand, UpdateProfileCommand } from './profile.commands';
import { PROFILE } from './profile.decider';
import { PROFILE_FILTERS } from './profile.projection';
import { GetProfileQuery, ListProfilesQuery, WrittenProfileQuery } from './profile.queries';

const ProfileId = new RecordIdPipe('Profile');

@ApiResource(PROFILE_API)
@Controller('v1/profiles')
export class ProfilesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly idempotentCreates: IdempotentCreates,
  ) {}

  @Post()
  @ApiRecordOperation(PROFILE_API, 'create')
  @HttpCode(201)
  async create(
    @Ctx() ctx: CommandContext,
    @Body() body: ProfileBody,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const fields = toFields(body);
    const created = await this.idempotentCreates.run(ctx, idempotencyKey, { kind: PROFILE, fields }, async (id) => {
      // Its own outcome, not read back, as an update's.
      const profile = await this.commands.execute(new CreateProfileCommand(ctx, id, fields));
      return { body: envelope({ Profile: await this.queries.execute(new WrittenProfileQuery(profile)) }, 201), revision: profile.revision };
    });
    setETag(res, created.revision);
    return created.body;
  }

  @Get()
  @ApiRecordOperation(PROFILE_API, 'list')
  async list(@Ctx() ctx: CommandContext, @Query() query: Record<string, unknown>, @Res({ passthrough: true }) res: Response) {
    const list = parseListQuery(query, PROFILE_FILTERS, 10, { cursor: true });
    const { profiles, ...page } = await inAccountTurn(ctx.accountId, () => this.queries.execute(new ListProfilesQuery(ctx.accountId, list)));
    setListHeaders(res, page);
    return envelope(
      profiles.map((p) => ({ Profile: p })),
      200,
    );
  }

  /** `?as_of=<epoch seconds>`: the profile as it stood then, folded from its events. */
  @Get(':id')
  @ApiRecordOperation(PROFILE_API, 'read')
  async read(
    @Ctx() ctx: CommandContext,
    @Param('id', ProfileId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { view, revision } = await this.queries.execute(new GetProfileQuery(ctx.accountId, id, parseAsOf(query)));
    setETag(res, revision);
    return envelope([{ Profile: view }], 200);
  }

  @Get(':id/history')
  @ApiRecordOperation(PROFILE_API, 'history')
  async history(
    @Ctx() ctx: CommandContext,
    @Param('id', ProfileId) id: string,
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) res: Response,
  ) {
    const { entries, total } = await this.queries.execute(new RecordHistoryQuery(PROFILE, ctx.accountId, id, parseListQuery(query, [], 100)));
    res.setHeader('X-Total-Count', String(total));
    return envelope(entries, 200);
  }

  /** HTTP 200 with body status 201, as the interface's example answers. */
  @Put(':id')
  @ApiRecordOperation(PROFILE_API, 'update')
  @HttpCode(200)
  async update(
    @Ctx() ctx: CommandContext,
    @Param('id', ProfileId) id: string,
    @Body() body: ProfileBody,
    @Headers('if-match') ifMatch: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ) {
    const profile = await this.commands.execute(new UpdateProfileCommand(ctx, id, toFields(body), parseIfMatch(ifMatch)));
    setETag(res, profile.revision);
    return envelope({ Profile: await this.queries.execute(new WrittenProfileQuery(profile)) }, 201);
  }

  @Delete(':id')
  @ApiRecordOperation(PROFILE_API, 'delete')
  @HttpCode(200)
  async remove(@Ctx() ctx: CommandContext, @Param('id', ProfileId) id: string, @Headers('if-match') ifMatch: string | undefined) {
    await this.commands.execute(new DeleteProfileCommand(ctx, id, parseIfMatch(ifMatch)));
    return envelope({ Profile: { id } }, 200, 'Profile deleted successfully.');
  }

  /** Erases the profile's data for good and frees its slug: a live or a deleted one; again, the same answer. */
  @Post(':id/erase')
  @ApiRecordOperation(PROFILE_API, 'erase')
  @HttpCode(200)
  async erase(@Ctx() ctx: CommandContext, @Param('id', ProfileId) id: string) {
    await this.commands.execute(new EraseProfileCommand(ctx, id));
    return envelope({ Profile: { id } }, 200, 'Profile erased.');
  }
}
