/**
 * The service's errors, as the contract names them. Thrown anywhere (domain, handlers, HTTP
 * plumbing); the HTTP layer's exception filter gives each code its status and the error envelope.
 */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'MALFORMED_JSON'
  | 'UNAUTHORIZED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PRECONDITION_FAILED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'MALFORMED_REQUEST'
  | 'REQUEST_TIMEOUT'
  | 'EXPECTATION_FAILED'
  | 'HEADERS_TOO_LARGE'
  | 'INTERNAL'
  | 'UNAVAILABLE';

export interface FieldFault {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldFault[],
    /** Seconds, sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const validationFailed = (details: FieldFault[]) => new ApiError('VALIDATION_FAILED', 'The request has invalid fields.', details);

export const notFound = (what: string) => new ApiError('NOT_FOUND', `${what} not found.`);
