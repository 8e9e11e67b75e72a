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

  /** Routes to add once the service's own are (see `addAfterRoutes`). */
  private readonly lateRoutes: (() => void)[] = [];

  /**
   * Adds routes after every controller's, just before Nest's not-found handler: a request walks
   * past each route before its own, so rarely used ones (the docs) are best kept last.
   */
  addAfterRoutes(add: () => void): void {
    this.lateRoutes.push(add);
  }

  override setNotFoundHandler(...args: Parameters<ExpressAdapter['setNotFoundHandler']>) {
    for (const add of this.lateRoutes.splice(0)) add();
    return super.setNotFoundHandler(...args);
  }

  override reply(response: Response, body: unknown, statusCode?: number): void {
    sendJson(response, statusCode ?? response.statusCode, body ?? null);
  }
}
