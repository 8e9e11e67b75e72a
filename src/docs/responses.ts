import { ApiResponse } from '@nestjs/swagger';
import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';
import type { ErrorCode } from '../http/api-error';
import * as EXAMPLE from './examples';

/**
 * The parts of the OpenAPI document every answer shares: the common response schemas, the headers,
 * the error answers with the codes each status carries, and the success envelope.
 */

export const ref = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/** The response schemas every resource shares; setUpDocs puts the resources' answers before them. */
export const RESPONSE_SCHEMAS: Record<string, SchemaObject> = {
  HistoryEntry: {
    type: 'object',
    description: "One event of a record's history.",
    additionalProperties: false,
    required: ['event', 'revision', 'occurred', 'actor', 'changes'],
    properties: {
      event: { type: 'string', description: 'the event type, e.g. CustomerUpdated' },
      revision: { type: 'integer', minimum: 0 },
      occurred: { type: 'string', format: 'date-time', description: 'when the event was stored (UTC, milliseconds)' },
      actor: { type: 'string', description: 'the account whose token made the change' },
      changes: ref('Changes'),
      imported: ref('Imported'),
    },
  },
  Imported: {
    type: 'object',
    description:
      "only on the create of a record moved in by the operators' import (`npm run cli -- import`): who ran it, when, from which file. The create keeps the record's own creation time (`occurred`, `time`); this is when it was imported",
    additionalProperties: false,
    required: ['by', 'at', 'file'],
    properties: {
      by: { type: 'string', description: 'the operating-system user who ran the import' },
      at: { type: 'string', format: 'date-time', description: 'when the import stored it (UTC, milliseconds)' },
      file: { type: 'string', description: 'the name of the file it came from' },
    },
  },
  Changes: {
    type: 'object',
    description:
      'each field the event changed, with values as reads show them ("" for no value); {} for a delete or an erasure. Once the record is erased, each field an event set maps to null: its values are gone for good',
    additionalProperties: {
      type: 'object',
      nullable: true,
      additionalProperties: false,
      required: ['from', 'to'],
      properties: { from: { type: 'string' }, to: { type: 'string' } },
    },
  },
};

export const REQUEST_ID = {
  'X-Request-Id': { description: "the request's id: the client's own when well-formed; also the events' correlationId", schema: { type: 'string' } },
};
export const ETAG = { ETag: { description: 'the record\'s stream revision, quoted: "3"', schema: { type: 'string', pattern: '^"[0-9]+"$' } } };
export const TOTAL_COUNT = {
  'X-Total-Count': { description: 'how many there are, ignoring paging (for a list: up to 10000)', schema: { type: 'string', pattern: '^[0-9]+$' } },
};
export const TOTAL_CAPPED = {
  'X-Total-Count-Capped': {
    required: false,
    description: 'true when more than 10000 match: X-Total-Count is then 10000, a lower bound',
    schema: { type: 'string', enum: ['true'] },
  },
};
export const NEXT_CURSOR = {
  'X-Next-Cursor': {
    required: false,
    description: 'on a full page: the after of the next one (absent once a page comes back short)',
    schema: { type: 'string' },
  },
};
export const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer' } } };

export const ERRORS: Record<number, { codes: ErrorCode[]; description: string; retry?: boolean }> = {
  400: {
    codes: ['VALIDATION_FAILED', 'MALFORMED_JSON'],
    description: 'invalid fields or parameters (each named in details), or a body that is not a JSON object',
  },
  401: { codes: ['UNAUTHORIZED'], description: 'access_token missing or invalid, or an Authorization header not of the form Bearer <token>' },
  404: { codes: ['NOT_FOUND'], description: "no such record for this account (also another account's records and malformed ids)" },
  409: { codes: ['CONFLICT'], description: 'slug taken, an Idempotency-Key reused with another body, or the record changed by too many writers at once' },
  412: { codes: ['PRECONDITION_FAILED'], description: 'If-Match no longer matches the record: nothing was written' },
  413: { codes: ['PAYLOAD_TOO_LARGE'], description: 'body over 64 KiB (or declared so by Content-Length, whatever the method)' },
  415: { codes: ['UNSUPPORTED_MEDIA_TYPE'], description: 'body not application/json' },
  417: { codes: ['EXPECTATION_FAILED'], description: 'an Expect header other than 100-continue' },
  429: {
    codes: ['RATE_LIMITED'],
    description:
      "this access token's request allowance (or this address's failed authentications) is used up; each instance of the service counts its own, and with WORKERS=N each worker allows 1/N of the configured limit",
    retry: true,
  },
  500: { codes: ['INTERNAL'], description: 'unexpected failure; no internals are shown' },
  503: {
    codes: ['UNAVAILABLE'],
    description: 'saved, but the read models have not caught up yet; a store is down; or a write was sent and its answer lost (it may have been saved)',
    retry: true,
  },
};

/**
 * The error envelope of every 4xx and 5xx answer, with the status and codes of one. Whole, not an
 * `allOf` of a shared envelope and the status's own part: a linter that reads an object schema
 * without `additionalProperties` as closed (Redocly's example check) would refuse every example
 * of such a pair, the shared part's `message` being unknown to the other part.
 */
function errorSchema(status: number, codes: ErrorCode[]): SchemaObject {
  return {
    type: 'object',
    description: `The error envelope of a ${status} answer.`,
    additionalProperties: false,
    required: ['success', 'status', 'error'],
    properties: {
      success: { type: 'boolean', enum: [false] },
      status: { type: 'integer', enum: [status], description: 'the HTTP status again' },
      error: {
        type: 'object',
        additionalProperties: false,
        required: ['code', 'message'],
        properties: {
          code: { type: 'string', enum: codes },
          message: { type: 'string' },
          details: {
            type: 'array',
            minItems: 1,
            description: 'every faulty field, when fields are at fault',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['field', 'message'],
              properties: { field: { type: 'string' }, message: { type: 'string' } },
            },
          },
        },
      },
    },
  };
}

/** The error answers' schemas, one a status (`Error404`), shared by the operations that give it; setUpDocs adds them. */
export const ERROR_SCHEMAS: Record<string, SchemaObject> = Object.fromEntries(
  Object.entries(ERRORS).map(([status, { codes }]) => [`Error${status}`, errorSchema(Number(status), codes)]),
);

/** An error answer in the document; `description` replaces the status's usual one where an operation refuses for reasons of its own. */
export function errorResponse(status: number, example: unknown = EXAMPLE.ERRORS[status], description = ERRORS[status].description) {
  const { retry } = ERRORS[status];
  return ApiResponse({
    status,
    description,
    headers: { ...REQUEST_ID, ...(retry ? RETRY_AFTER : {}) },
    content: { 'application/json; charset=UTF-8': { schema: ref(`Error${status}`), example } },
  });
}

export function successResponse(
  status: number,
  description: string,
  bodyStatus: number,
  data: SchemaObject,
  example: unknown,
  extra: { message?: string; headers?: object; alternatives?: Record<string, { schema: SchemaObject; example: unknown }> } = {},
) {
  const properties: Record<string, SchemaObject> = {
    data,
    success: { type: 'boolean', enum: [true] },
    status: { type: 'integer', enum: [bodyStatus] },
    ...(extra.message ? { message: { type: 'string', enum: [extra.message] } } : {}),
  };
  return ApiResponse({
    status,
    description,
    headers: { ...REQUEST_ID, ...extra.headers },
    content: {
      'application/json; charset=UTF-8': {
        schema: { type: 'object', additionalProperties: false, required: Object.keys(properties), properties },
        example: { data: example, success: true, status: bodyStatus, ...(extra.message ? { message: extra.message } : {}) },
      },
      ...extra.alternatives,
    },
  });
}

export const wrapper = (resource: string, schema: SchemaObject | ReferenceObject): SchemaObject => ({
  type: 'object',
  additionalProperties: false,
  required: [resource],
  properties: { [resource]: schema },
});
