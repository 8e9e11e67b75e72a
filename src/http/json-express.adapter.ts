import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Response } from 'express';
import { IncomingMessage, ServerOptions, ServerResponse } from 'node:http';
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
    const app: Express = this.getInstance();
    this.httpServer = createHttpServer(app, this.limits, this.log, bornExpressMessages(app));
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

  override setNotFoundHandler(...args: Parameters<ExpressAdapter['setNotFoundHandler']>): unknown {
    for (const add of this.lateRoutes.splice(0)) add();
    return super.setNotFoundHandler(...args);
  }

  override reply(response: Response, body: unknown, statusCode?: number): void {
    // A handler that wrote its answer as it went (the change feed's event stream) has answered.
    if (response.headersSent) return;
    sendJson(response, statusCode ?? response.statusCode, body ?? null);
  }
}

/**
 * Request and response classes whose instances are born with the app's own prototypes, which then
 * become the app's: Express's `Object.setPrototypeOf(req, app.request)` on every request
 * (express/lib/application.js, `handle`) finds the prototype already set and changes nothing.
 * Changing it costs more than the change: each request's objects then outlive the young
 * generation's collections and are promoted, so every scavenge copies megabytes and pauses the
 * event loop (expressjs/express#5998, nodejs/node#37457). Born with them, scavenges promote nothing.
 */
function bornExpressMessages(app: Express): ServerOptions {
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  // Below the app's prototypes (its methods, `req.app`), above Node's: the chain Express builds, made once.
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  app.request = ExpressRequest.prototype as Express['request'];
  app.response = ExpressResponse.prototype as Express['response'];
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
}
