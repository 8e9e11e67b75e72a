import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import { sendJson } from './json-response';

/** Express as Nest drives it, except that handler results are written by sendJson. */
export class JsonExpressAdapter extends ExpressAdapter {
  override reply(response: Response, body: unknown, statusCode?: number): void {
    sendJson(response, statusCode ?? response.statusCode, body ?? null);
  }
}
