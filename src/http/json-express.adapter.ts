import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import type { Logger } from '../logging/logging';
import { createHttpServer, ServerLimits } from './http-server';
import { sendJson } from './json-response';

/** Express as Nest drives it, on the server of http-server.ts, except that handler results are written by sendJson. */
export class JsonExpressAdapter extends ExpressAdapter {
  constructor(
    private readonly limits: ServerLimits,
    private readonly log: Logger,
  ) {
    super();
  }

  override initHttpServer(): void {
    this.httpServer = createHttpServer(this.getInstance(), this.limits, this.log);
  }

  override reply(response: Response, body: unknown, statusCode?: number): void {
    sendJson(response, statusCode ?? response.statusCode, body ?? null);
  }
}
