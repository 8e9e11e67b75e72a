import { Controller, Get, Inject, Logger, Query, Req, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { Response } from 'express';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ApiFeed, ApiFeedOperation } from '../docs/openapi';
import { validationFailed } from '../errors';
import { START, type Position } from '../event-store/event-store.port';
import { inAccountTurn } from '../http/account-turns';
import { whileOpen } from '../http/draining';
import { envelope } from '../http/envelope';
import { parseFeedQuery } from '../http/list-query';
import { Ctx, type ServiceRequest } from '../http/request-context';
import type { CommandContext } from '../records/command-context';
import { FeedCaps } from './feed-caps';
import { FeedCursorSecret } from './feed-cursor-secret';
import { streamFeed, STREAM_PAGE } from './feed-stream';
import { FeedTail } from './feed-tail';
import { FEED_API } from './feed.api';
import { FeedPage, FeedPageQuery } from './feed.queries';

/** GET /v1/events: the account's changes, as pages (long-polled with `wait`) or as server-sent events. */
@ApiFeed()
@Controller('v1/events')
export class FeedController {
  private readonly logger = new Logger('Feed');

  constructor(
    private readonly queries: QueryBus,
    private readonly tail: FeedTail,
    private readonly secret: FeedCursorSecret,
    private readonly caps: FeedCaps,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiFeedOperation(FEED_API)
  async read(@Ctx() ctx: CommandContext, @Query() query: Record<string, unknown>, @Req() req: ServiceRequest, @Res({ passthrough: true }) res: Response) {
    const { after, limit, wait } = parseFeedQuery(query);
    const streaming = /\btext\/event-stream\b/i.test(req.headers.accept ?? '');
    const lastEventId = streaming ? req.headers['last-event-id'] : undefined;
    // An EventSource that reconnects sends the URL it began with, and the last entry it had as Last-Event-ID.
    const [name, cursor] = typeof lastEventId === 'string' && lastEventId !== '' ? ['Last-Event-ID', lastEventId] : ['after', after];
    const from = await this.open(ctx.accountId, name, cursor);
    // A request that may stay open holds one of the token's slots and its account's while it does.
    if (streaming || wait > 0) this.caps.hold(req.tokenKey!, ctx.accountId, res);
    const closed = whileOpen(res, this.tail.closed);
    const read = (accountId: string, position: Position, count: number) =>
      inAccountTurn(accountId, () => this.queries.execute(new FeedPageQuery(accountId, position, count)));
    if (streaming) {
      // Written here as it goes; the adapter's reply leaves an answer already begun alone.
      await streamFeed(res, {
        from,
        read: (position) => read(ctx.accountId, position, STREAM_PAGE),
        watch: () => this.tail.watch(ctx.accountId),
        closed,
        heartbeatMs: this.config.feedHeartbeatMs,
        onEnd: (reason) => this.logger.warn(`Ended an event stream of account ${ctx.accountId}: ${reason}`),
      });
      return;
    }
    const page = await this.longPoll(
      from,
      wait * 1000,
      closed,
      (position) => read(ctx.accountId, position, limit),
      () => this.tail.watch(ctx.accountId),
    );
    const cursors = await this.secret.cursors();
    res.setHeader('X-Next-Cursor', cursors.seal(ctx.accountId, page.next));
    return envelope(page.entries, 200);
  }

  /** The position a cursor names, START without one; 400 naming where it came from when it is not this account's. */
  private async open(accountId: string, name: string, cursor: string | undefined): Promise<Position> {
    if (cursor === undefined) return START;
    const position = (await this.secret.cursors()).open(accountId, cursor);
    if (!position) throw validationFailed([{ field: name, message: `${name} must be a cursor the feed gave this account (X-Next-Cursor, or an entry id)` }]);
    return position;
  }

  /** Reads a page; while it is empty, waits for news until `waitMs` has passed. */
  private async longPoll(
    from: Position,
    waitMs: number,
    closed: AbortSignal,
    read: (position: Position) => Promise<FeedPage>,
    watch: () => ReturnType<FeedTail['watch']>,
  ): Promise<FeedPage> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const news = waitMs > 0 ? watch() : undefined;
      try {
        const page = await read(from);
        const left = deadline - Date.now();
        if (page.entries.length > 0 || !news || left <= 0 || closed.aborted) return page;
        from = page.next;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, left);
          closed.addEventListener('abort', done, { once: true });
          void news.changed.then(done);
          function done() {
            clearTimeout(timer);
            closed.removeEventListener('abort', done);
            resolve();
          }
        });
      } finally {
        news?.stop();
      }
    }
  }
}
