/**
 * The service's errors, as the contract names them. Thrown anywhere (domain, handlers, HTTP
 * plumbing) and turned into the error envelope by the HTTP layer's exception filter.
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

const STATUS: Record<ErrorCode, number> = {
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

export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldFault[],
    /** Seconds, sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = STATUS[code];
  }
}

export const validationFailed = (details: FieldFault[]) =>
  new ApiError('VALIDATION_FAILED', 'The request has invalid fields.', details);

export const notFound = (what: string) => new ApiError('NOT_FOUND', `${what} not found.`);
