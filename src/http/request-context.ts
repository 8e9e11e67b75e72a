import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { CommandContext } from '../records/command-context';

export type ServiceRequest = Request &
  Partial<CommandContext> & {
    /** The access token's digest (never the token): what limits per token key on. */
    tokenKey?: string;
  };

/** The authenticated caller's context; only on routes behind the access-token middleware. */
export const Ctx = createParamDecorator((_: unknown, ctx: ExecutionContext): CommandContext => {
  const req = ctx.switchToHttp().getRequest<ServiceRequest>();
  if (!req.accountId || !req.requestId) throw new Error('Request context read on an unauthenticated route');
  return { accountId: req.accountId, requestId: req.requestId };
});
