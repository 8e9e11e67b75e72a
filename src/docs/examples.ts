/**
 * Examples for the OpenAPI document: what "Try it out" sends and what the answers show. Realistic
 * values the service really takes and answers (the OpenAPI test checks each against its schema),
 * so a client author can paste them. The field values are the body classes' @Example ones, and the
 * answers are what the views make of them: each feature builds its own in its ApiRecordSpec
 * (customers/customer.api.ts, profiles/profile.api.ts) with the helpers here.
 */

import { toFields } from '../http/body-validation.pipe';
import { bodyFields } from '../http/field-rules';
import type { RecordState } from '../records/record';

const CREATED = 1795312257;

/** What "Try it out" sends to create: each field with an @Example, in the body's order. */
export const createExample = (body: abstract new () => object) =>
  Object.fromEntries(bodyFields(body).flatMap((f) => (f.example === undefined ? [] : [[f.name, f.example]])));

/** A record holding the fields a create and an update gave, for the views to show as the answers do. */
export const record = (id: string, ...bodies: object[]): RecordState => ({
  id,
  accountId: '',
  revision: 0,
  seq: 0,
  deleted: false,
  created: CREATED,
  fields: Object.fromEntries(bodies.flatMap((body) => Object.entries(toFields(body)))),
});

const error = (status: number, code: string, message: string, details?: { field: string; message: string }[]) => ({
  success: false,
  status,
  error: { code, message, ...(details ? { details } : {}) },
});

/** One realistic answer per error status; the 400 of a customer write names the customer rule. */
export const ERRORS: Record<number, object> = {
  400: error(400, 'VALIDATION_FAILED', 'The request has invalid fields.', [
    { field: 'mobile', message: 'mobile must be exactly 11 digits' },
    { field: 'email', message: 'email must be a valid e-mail address of at most 254 characters' },
  ]),
  401: error(401, 'UNAUTHORIZED', 'access_token is invalid'),
  404: error(404, 'NOT_FOUND', 'Customer not found.'),
  409: error(409, 'CONFLICT', 'The slug "saffrontea" is already taken.', [{ field: 'slug', message: 'slug is already taken' }]),
  412: error(412, 'PRECONDITION_FAILED', 'The customer has changed since: its current ETag is "1".'),
  413: error(413, 'PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.'),
  415: error(415, 'UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON, sent with Content-Type: application/json.'),
  417: error(417, 'EXPECTATION_FAILED', 'Expect: 100-continue is the only expectation the service meets.'),
  429: error(429, 'RATE_LIMITED', 'Too many requests with this access token: at most 6000 per 60 s. Retry after the number of seconds in Retry-After.'),
  500: error(500, 'INTERNAL', 'Internal server error.'),
  503: error(503, 'UNAVAILABLE', 'The change was saved, but the read models have not caught up with it yet. Read it again shortly.'),
};

export const READY = {
  status: 'ready',
  head: '100002',
  projections: [
    { name: 'profiles', state: 'running', folding: true, checkpoint: '100002', lag: 0, failure: null },
    { name: 'customers', state: 'running', folding: true, checkpoint: '100002', lag: 0, failure: null },
  ],
  problems: [],
};

export const NOT_READY = {
  status: 'unavailable',
  head: '100002',
  projections: [
    { name: 'profiles', state: 'running', folding: true, checkpoint: '43000', lag: 57002, failure: null },
    { name: 'customers', state: 'running', folding: true, checkpoint: '100002', lag: 0, failure: null },
  ],
  problems: ['projection profiles is 57002 events behind (bound 1000)'],
};
