import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../errors';

/** A path with broken percent-encoding names no route and no record: 404, like any unknown path. */
export function undecodablePathMiddleware(req: Request, _res: Response, next: NextFunction): void {
  try {
    decodeURIComponent(req.path);
  } catch {
    return next(new ApiError('NOT_FOUND', `No route for ${req.method} a path with malformed percent-encoding.`));
  }
  next();
}
