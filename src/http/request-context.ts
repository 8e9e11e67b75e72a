import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';

/** Who is asking and which request this is: what commands and events carry along. */
export interface RequestContext {
  accountId: string;
  /** Also the correlationId of the events the request appends. */
  requestId: string;
}

export type ServiceRequest = Request & Partial<RequestContext>;

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Takes a well-formed X-Request-Id from the client, or makes one, and echoes it. */
export function requestIdMiddleware(req: ServiceRequest, res: Response, next: NextFunction): void {
  const sent = req.headers['x-request-id'];
  req.requestId = typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
  res.setHeader('X-Request-Id', req.requestId);
  next();
}

/** The authenticated caller's context; only on routes behind the access-token middleware. */
export const Ctx = createParamDecorator((_: unknown, ctx: ExecutionContext): RequestContext => {
  const req = ctx.switchToHttp().getRequest<ServiceRequest>();
  if (!req.accountId || !req.requestId) throw new Error('Request context read on an unauthenticated route');
  return { accountId: req.accountId, requestId: req.requestId };
});
