import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger, NotFoundException } from '@nestjs/common';
import type { Response } from 'express';
import { FieldFault, Refusal, RefusalReason } from '../errors';
import { StreamTombstonedError, UnreadableEventError } from '../event-store/event-store.port';
import type { LoggedError } from '../logging/logging';
import { ReadModelsBehindError } from '../projections/read-models-behind.error';
import { FilterNotBuiltError } from '../read-store/read-store.port';
import { StoreUnavailableError, WriteOutcomeUnknownError } from '../storage/store-unavailable.error';
import { ApiError, ErrorCode } from './api-error';
import { sendJson } from './json-response';
import type { ServiceRequest } from './request-context';

/** The HTTP status of each of the service's error codes. */
export const STATUS: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  // What Node's HTTP parser refuses before the app sees a request (see http/http-server.ts).
  MALFORMED_REQUEST: 400,
  REQUEST_TIMEOUT: 408,
  EXPECTATION_FAILED: 417,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** The code each of the domain's refusals is answered with. */
const REFUSED: Record<RefusalReason, ErrorCode> = {
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  invalid: 'VALIDATION_FAILED',
  // The contract has no 410: a record that can never be written again is a conflict its client cannot resolve.
  gone: 'CONFLICT',
  precondition_failed: 'PRECONDITION_FAILED',
};

/** Turns anything thrown while serving a request into the contract's error envelope. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<ServiceRequest>();
    const res = http.getResponse<Response>();
    const error = toApiError(exception, req);
    if (exception instanceof StoreUnavailableError || exception instanceof UnreadableEventError) {
      this.logger.warn(`${req.method} ${req.path} answered 503: ${exception.message}`);
    } else if (error.code === 'INTERNAL') {
      // req.path leaves the query string, and so the access token, out of the log.
      this.logger.error(
        { msg: `${req.method} ${req.path} failed`, requestId: req.requestId },
        exception instanceof Error ? exception.stack : String(exception),
      );
    }
    const details = error.details?.length ? bounded(error.details) : undefined;
    // For the request's log line: the code and the faulty fields' names (their values may be personal
    // data), as bounded as the answer, so a hostile body cannot make a huge log line either.
    res.locals.error = { code: error.code, ...(details ? { fields: details.map((d) => d.field) } : {}) } satisfies LoggedError;
    if (res.headersSent) return void res.end();
    if (error.retryAfter !== undefined) res.setHeader('Retry-After', String(error.retryAfter));
    const status = STATUS[error.code];
    sendJson(res, status, {
      success: false,
      status,
      error: {
        code: error.code,
        message: error.message,
        ...(details ? { details } : {}),
      },
    });
  }
}

/** At most this many faults are listed, each field name cut to a length: a hostile body cannot make a large answer. */
const MAX_DETAILS = 20;
const MAX_FIELD_NAME = 100;

function bounded(details: FieldFault[]): FieldFault[] {
  const listed = details
    .slice(0, MAX_DETAILS)
    .map(({ field, message }) =>
      field.length > MAX_FIELD_NAME
        ? { field: `${field.slice(0, MAX_FIELD_NAME)}…`, message: message.replace(field, `${field.slice(0, MAX_FIELD_NAME)}…`) }
        : { field, message },
    );
  if (details.length > MAX_DETAILS) listed.push({ field: '(more)', message: `${details.length - MAX_DETAILS} more faults not listed` });
  return listed;
}

/** Errors raised by Express and body reading carry an HTTP status and a `type`. */
interface ExpressError {
  status?: number;
  type?: string;
}

function toApiError(exception: unknown, req: ServiceRequest): ApiError {
  if (exception instanceof ApiError) return exception;
  if (exception instanceof Refusal) return new ApiError(REFUSED[exception.reason], exception.message, exception.details);
  if (exception instanceof ReadModelsBehindError) return new ApiError('UNAVAILABLE', exception.message, undefined, exception.retryAfter);
  if (exception instanceof FilterNotBuiltError) {
    return new ApiError(
      'UNAVAILABLE',
      `Lists cannot filter on ${exception.field} until the read model rebuilt with it is in place; try again shortly.`,
      undefined,
      5,
    );
  }
  // A store's failure the writer cannot settle: the record was removed from the store by hand.
  if (exception instanceof StreamTombstonedError) return new ApiError('CONFLICT', exception.message);
  // An event of the record this version cannot read or fold (written by a newer one during an
  // upgrade, or by hand): the log names it; the record answers once a version that reads it serves.
  if (exception instanceof UnreadableEventError) {
    return new ApiError('UNAVAILABLE', 'A change to this record cannot be read by this version of the service; try again later.', undefined, 5);
  }
  if (exception instanceof WriteOutcomeUnknownError) {
    // A create is safe to retry under its Idempotency-Key; an update, a delete or an erasure as it is.
    const retry = req.method === 'POST' && !req.path.endsWith('/erase') ? 'retry with the same Idempotency-Key' : 'retry it as it is';
    return new ApiError('UNAVAILABLE', `The service lost its storage while saving: the change may have been saved; ${retry}.`, undefined, 5);
  }
  if (exception instanceof StoreUnavailableError) {
    return new ApiError('UNAVAILABLE', 'The service cannot reach its storage right now; try again shortly.', undefined, 5);
  }
  if (exception instanceof NotFoundException) {
    // Nest's own message repeats the URL with its query string: build one without it.
    return new ApiError('NOT_FOUND', `No route for ${req.method} ${req.path}.`);
  }
  const status = exception instanceof HttpException ? exception.getStatus() : (exception as ExpressError)?.status;
  const type = (exception as ExpressError)?.type;
  if (status === 413 || type === 'entity.too.large') {
    return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.');
  }
  if (status === 415 || type === 'encoding.unsupported') {
    return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be uncompressed or gzip/deflate-encoded JSON.');
  }
  if (status === 400) return new ApiError('VALIDATION_FAILED', 'The request is malformed.');
  return new ApiError('INTERNAL', 'Internal server error.');
}
