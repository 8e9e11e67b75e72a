import express, { NextFunction, Request, Response } from 'express';
import { Refusal, validationFailed } from '../errors';
import { ApiError } from './api-error';

export const BODY_LIMIT_BYTES = 64 * 1024;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
/** POST routes that take no body (erasure): none is needed, and one sent may hold nothing but {}. */
const TAKES_NO_BODY = /\/erase\/?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function requireJsonContentType(req: Request, _res: Response, next: NextFunction): void {
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType !== 'application/json') {
    return next(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON, sent with Content-Type: application/json.'));
  }
  next();
}

/** Reads the body as bytes, at most 64 KiB (413 past that, before reading it all). */
const rawBody = express.raw({ type: () => true, limit: BODY_LIMIT_BYTES });

/** The 100 Continue a client asked for is sent only now, when the body is wanted (see http-server.ts). */
function readBody(req: Request, res: Response, next: NextFunction): void {
  if (req.headers.expect !== undefined) res.writeContinue();
  rawBody(req, res, next);
}

function parseJson(req: Request, _res: Response, next: NextFunction): void {
  const bytes: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  let text: string;
  try {
    text = utf8.decode(bytes).replace(/^\uFEFF/, '');
  } catch {
    return next(new ApiError('MALFORMED_JSON', 'The request body is not valid UTF-8.'));
  }
  if (text.trim() === '') return next(new ApiError('MALFORMED_JSON', 'The request body is empty; send a JSON object.'));
  try {
    req.body = JSON.parse(text) as unknown;
  } catch (error) {
    return next(new ApiError('MALFORMED_JSON', `The request body is not valid JSON: ${(error as Error).message}`));
  }
  next();
}

/**
 * The body rules of docs/api.md ("Headers", "Errors"): JSON only (415), 64 KiB at most (413),
 * well-formed (400). One middleware, not three: each Express layer costs a pass of the router on
 * every request.
 */
export function jsonBody(req: Request, res: Response, next: NextFunction): void {
  if (!METHODS_WITH_BODY.has(req.method)) {
    req.body = undefined;
    return next();
  }
  const takesNoBody = TAKES_NO_BODY.test(req.path);
  const sent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (takesNoBody && !sent) {
    req.body = undefined;
    return next();
  }
  const parsed = takesNoBody ? (error?: unknown) => next(error ?? emptyBodyOnly(req.body)) : next;
  requireJsonContentType(req, res, (error?: unknown) => {
    if (error) return next(error);
    readBody(req, res, (readError?: unknown) => (readError ? next(readError) : parseJson(req, res, parsed)));
  });
}

function emptyBodyOnly(body: unknown): Refusal | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return validationFailed([{ field: '(body)', message: 'this operation takes no body; leave it out (or send {})' }]);
  }
  const fields = Object.keys(body);
  if (fields.length === 0) return undefined;
  return validationFailed(fields.map((field) => ({ field, message: 'this operation takes no body fields' })));
}
