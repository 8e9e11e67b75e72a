import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/** Who is asking and which request this is: what commands and events carry along. */
export interface RequestContext {
  accountId: string;
  /** Also the correlationId of the events the request appends. */
  requestId: string;
}

export type ServiceRequest = Request & Partial<RequestContext>;

/** The authenticated caller's context; only on routes behind the access-token middleware. */
export const Ctx = createParamDecorator((_: unknown, ctx: ExecutionContext): RequestContext => {
  const req = ctx.switchToHttp().getRequest<ServiceRequest>();
  if (!req.accountId || !req.requestId) throw new Error('Request context read on an unauthenticated route');
  return { accountId: req.accountId, requestId: req.requestId };
});
