import { applyDecorators } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiParam, ApiQuery, ApiSecurity, ApiTags, DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { ReferenceObject, SchemaObject } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { MatchKind } from '../read-store/read-store.port';
import {
  ERROR_SCHEMAS,
  ERRORS,
  ETAG,
  NEXT_CURSOR,
  RESPONSE_SCHEMAS,
  TOTAL_CAPPED,
  TOTAL_COUNT,
  errorResponse,
  ref,
  successResponse,
  wrapper,
} from './responses';
import { FEED_CURSOR, feedEntrySchema } from './feed-entry';
import { DIGIT_FIELDS } from '../http/field-rules';
import { FEED_LIMIT, FEED_MAX_WAIT_SECONDS, MAX_LIST_OFFSET } from '../http/list-query';
import { sendJson } from '../http/json-response';

/**
 * The OpenAPI document (`GET /docs`, `GET /docs-json`): routes, parameters and request bodies come
 * from the controllers and the field rules; the response shapes below are built from the same field
 * lists the views use. Everything is described as the service really answers, quirks included.
 * What differs between the resources comes from each feature's ApiRecordSpec, so this folder
 * needs none of them.
 */

/** A response component schema: a record as some answers show it. */
export interface ApiAnswer {
  name: string;
  description: string;
  /** The body fields shown, in the answer's order. */
  fields: string[];
  /** What the view adds after them. */
  extra?: Record<string, SchemaObject>;
}

/** What a feature tells the document about its /v1 resource. */
export interface ApiRecordSpec {
  /** The wrapper of every answer (the kind's label); in lower case, the tag and the paths' noun. */
  resource: string;
  /** The tag's description: what these records are. */
  tag: string;
  bodies: { create: Type<object>; update: Type<object> };
  /** The list filters, as the projection's schema declares them. */
  filters: Record<string, MatchKind>;
  /** A create's answer, and the one of lists, reads and updates when it shows fewer fields. */
  answers: { full: ApiAnswer; short?: ApiAnswer };
  /** What "Try it out" sends (create, update, a list's filters) and what the answers show. */
  examples: { id: string; create: object; update: object; full: object; short: object; updated: object; history: object[]; filters: Record<string, string> };
  /**
   * The resource's own rules, in the operations' descriptions: what a create requires (sentences),
   * what an update may not change (sentences), what else an erasure frees (a clause).
   */
  rules: { create: string; update?: string; erase?: string };
}

/** `a, b and c`. */
const listed = (names: readonly string[]) => (names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names.join(''));

/** The collections of `specs`, as the paths and tags name them: `profiles`. */
const collectionsOf = (specs: ApiRecordSpec[]) => specs.map((spec) => `${spec.resource.toLowerCase()}s`);

function recordSchema({ description, fields, extra = {} }: ApiAnswer): SchemaObject {
  const properties: Record<string, SchemaObject> = {
    id: { type: 'string', format: 'uuid', minLength: 36, maxLength: 36, description: 'made by the service' },
  };
  for (const field of fields) {
    properties[field] = DIGIT_FIELDS.has(field)
      ? { type: 'string', pattern: '^[0-9]*$', description: 'digits, as a string; "" when not set' }
      : { type: 'string', description: '"" when not set' };
  }
  Object.assign(properties, extra, { created: { type: 'integer', description: 'seconds since the epoch' } });
  return { type: 'object', description, additionalProperties: false, required: Object.keys(properties), properties };
}

/** Tags and the two ways of sending the token, for a /v1 controller. */
export const ApiResource = (spec: ApiRecordSpec) => applyDecorators(ApiTags(collectionsOf([spec])[0]), ApiBearerAuth(), ApiSecurity('access_token'));

/**
 * The tag of what is outside /v1 (health, metrics), which setUpDocs marks as taking no token, and the
 * errors of the checks made before routing, which these routes answer too.
 */
export const ApiOperations = () => applyDecorators(ApiTags('operations'), errorResponse(413), errorResponse(417));

/** `after`, and the offset's bound, of record lists (histories page by offset at any depth). */
const CURSOR = [
  ApiQuery({
    name: 'after',
    required: false,
    schema: { type: 'string' },
    description: `the X-Next-Cursor of the page before: the records after it, at any depth; not with offset or page, which skip at most ${MAX_LIST_OFFSET} records`,
  }),
];

const PAGING = (defaultLimit: number) => [
  ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: defaultLimit }, example: defaultLimit }),
  ApiQuery({ name: 'offset', required: false, schema: { type: 'integer', minimum: 0 }, description: 'records to skip; not with page', example: 0 }),
  ApiQuery({
    name: 'page',
    required: false,
    schema: { type: 'integer', minimum: 1 },
    description: 'page N is offset (N-1)*limit; not with offset',
    example: 1,
  }),
];

/** How each kind of filter matches, for client authors. */
const MATCH_RULES: Record<MatchKind, string> = {
  'exact-ci': 'matches the whole value, ignoring case',
  exact: 'matches the whole value exactly; digits may be typed in ASCII, Persian or Arabic-Indic',
  'contains-ci': 'matches any record whose value contains it, ignoring case',
};

const FILTERS = (filters: Record<string, MatchKind>, examples: Record<string, string>) =>
  Object.entries(filters).map(([name, kind]) =>
    ApiQuery({
      name,
      required: false,
      schema: { type: 'string' },
      description: `filter: ${MATCH_RULES[kind]}; empty is ignored; filters combine with AND`,
      example: examples[name],
    }),
  );

const IF_MATCH = ApiHeader({
  name: 'If-Match',
  required: false,
  description: 'write only if the record is still at this revision: "3", a list "3", "4", or * (exists); compared strongly',
  schema: { type: 'string' },
  // No example: "Try it out" would send it, and a second update would answer 412.
});

const ID = (example: string) =>
  ApiParam({
    name: 'id',
    description: 'the record id: 36 characters of UUID form (anything else answers 404)',
    schema: { type: 'string' },
    example,
  });

/** The request body: the handler's body class, with an example "Try it out" sends as it is. */
const BODY = ({ resource, bodies, examples }: ApiRecordSpec, operation: 'create' | 'update') =>
  ApiBody({ type: bodies[operation], examples: { [operation]: { summary: `${operation} a ${resource.toLowerCase()}`, value: examples[operation] } } });

/** What a delete and an erasure answer inside the wrapper: the record's id alone. */
const ID_ONLY = { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string' } } };

type Operation = 'create' | 'list' | 'read' | 'history' | 'update' | 'delete' | 'erase';

/**
 * The error statuses each operation can answer, the one place they are listed (docs/api.md's route
 * table says the same; the run fails when a test receives one not declared here). Every /v1 route
 * can also answer 401, 429 and 500, and 413 and 417 from the checks made before routing (a declared
 * body over 64 KiB, an Expect header); reads answer 503 when the read models or a store are
 * unavailable; an erasure reads its (empty) body as JSON, and races a concurrent write (409).
 */
const OPERATION_ERRORS: Record<Operation, number[]> = Object.fromEntries(
  Object.entries({
    create: [400, 409, 413, 415, 503],
    list: [400, 503],
    read: [400, 404, 503],
    history: [400, 404, 503],
    update: [400, 404, 409, 412, 413, 415, 503],
    delete: [400, 404, 409, 412, 503],
    erase: [400, 404, 409, 413, 415, 503],
  }).map(([operation, statuses]) => [operation, [...new Set([...statuses, 401, 413, 417, 429, 500])].sort()]),
) as Record<Operation, number[]>;

/** What each operation takes and answers, before the errors it can give. */
const OPERATIONS: Record<Operation, (spec: ApiRecordSpec, parts: OperationParts) => MethodDecorator[]> = {
  create: (spec, { name, full, example, resource, rules }) => [
    ApiOperation({
      summary: `Create a ${name}`,
      description: `${rules.create} Digit fields take a JSON integer >= 0 or a string of digits (ASCII, Persian or Arabic-Indic; answered as ASCII). Unknown and output-only fields are refused (400).`,
    }),
    ApiHeader({
      name: 'Idempotency-Key',
      required: false,
      description:
        'makes the create safe to retry: within 24 hours the same key and body answer the first response again and write nothing; 1 to 255 printable ASCII characters, no spaces',
      schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
      // No example: "Try it out" would send it, and a second create would answer 409.
    }),
    BODY(spec, 'create'),
    successResponse(201, `the new ${name}`, 201, wrapper(resource, full), { [resource]: example.full }, { headers: ETAG }),
  ],
  list: (spec, { name, short, example, resource }) => [
    ApiOperation({
      summary: `List ${name}s`,
      description: 'Newest first (in creation order), stable across pages. Each filter says how it matches; X-Total-Count counts every match, ignoring paging.',
    }),
    ...PAGING(10),
    ...CURSOR,
    ...FILTERS(spec.filters, example.filters),
    successResponse(200, `a page of the account's ${name}s`, 200, { type: 'array', items: wrapper(resource, short) }, [{ [resource]: example.short }], {
      headers: { ...TOTAL_COUNT, ...TOTAL_CAPPED, ...NEXT_CURSOR },
    }),
  ],
  read: (_spec, { name, short, id, example, resource }) => [
    ApiOperation({ summary: `Read a ${name}`, description: 'The record comes as the only item of an array.' }),
    id,
    ApiQuery({
      name: 'as_of',
      required: false,
      schema: { type: 'integer', minimum: 0 },
      description: 'epoch seconds: the record as it stood at the end of that second (404 if it did not exist then)',
      example: 1795312300,
    }),
    successResponse(200, `the ${name}`, 200, { type: 'array', minItems: 1, maxItems: 1, items: wrapper(resource, short) }, [{ [resource]: example.short }], {
      headers: ETAG,
    }),
  ],
  history: (_spec, { name, id, example }) => [
    ApiOperation({
      summary: `A ${name}'s history`,
      description: "The record's events, oldest first, also after a delete; entries have no wrapper. X-Total-Count counts the events.",
    }),
    id,
    ...PAGING(100),
    successResponse(200, `the ${name}'s events`, 200, { type: 'array', items: ref('HistoryEntry') }, example.history, { headers: TOTAL_COUNT }),
  ],
  update: (spec, { name, short, id, example, resource, rules }) => [
    ApiOperation({
      summary: `Update a ${name}`,
      description: `Fields not sent keep their values; "" or null clears one. Answers HTTP 200 with status 201 in the body.${rules.update ? ` ${rules.update}` : ''}`,
    }),
    id,
    IF_MATCH,
    BODY(spec, 'update'),
    successResponse(200, `the ${name} as changed (body status 201)`, 201, wrapper(resource, short), { [resource]: example.updated }, { headers: ETAG }),
  ],
  delete: (_spec, { name, id, example, resource }) => [
    ApiOperation({
      summary: `Delete a ${name}`,
      description: `The ${name} stops being: from then on reads, lists, updates and deletes answer 404. Its history stays and ends with ${resource}Deleted, and it can still be erased. Answers its id alone.`,
    }),
    id,
    IF_MATCH,
    successResponse(
      200,
      `the ${name} is deleted`,
      200,
      wrapper(resource, ID_ONLY),
      { [resource]: { id: example.id } },
      { message: `${resource} deleted successfully.` },
    ),
  ],
  erase: (_spec, { name, id, example, resource, rules }) => [
    ApiOperation({
      summary: `Erase a ${name}'s data for good`,
      description: `The right to erasure: takes no body. Works on a live or a deleted ${name}; erasing it again answers the same. Afterwards the ${name} does not exist for any read, as-of read, list, update or delete (404)${rules.erase ? `, ${rules.erase}` : ''}; its history keeps every entry with null for each value, and ends with ${resource}Erased. No readable copy of the values stays in the service's stores.`,
    }),
    id,
    successResponse(200, `the ${name} is erased`, 200, wrapper(resource, ID_ONLY), { [resource]: { id: example.id } }, { message: `${resource} erased.` }),
  ],
};

/** What the operations of one resource share. */
interface OperationParts {
  resource: ApiRecordSpec['resource'];
  name: string;
  full: ReferenceObject;
  short: ReferenceObject;
  id: MethodDecorator;
  example: ApiRecordSpec['examples'];
  rules: ApiRecordSpec['rules'];
}

/** One operation on a kind's /v1 collection (/v1/profiles, /v1/customers), with every answer it can give. */
export function ApiRecordOperation(spec: ApiRecordSpec, operation: Operation) {
  const { resource, answers, examples: example, rules } = spec;
  const parts: OperationParts = {
    resource,
    name: resource.toLowerCase(),
    full: ref(answers.full.name),
    short: ref((answers.short ?? answers.full).name),
    id: ID(example.id),
    example,
    rules,
  };
  return applyDecorators(...OPERATIONS[operation](spec, parts), ...OPERATION_ERRORS[operation].map((status) => errorResponse(status)));
}

/** What the change feed's module tells the document: examples of its answers (feed/feed.api.ts). */
export interface ApiFeedSpec {
  examples: {
    /** A page's entries, as `data` holds them. */
    entries: object[];
    /** The same entries as a stream sends them, with a heartbeat. */
    stream: string;
    /** A cursor, as X-Next-Cursor and `after` give it. */
    cursor: string;
    /** The 400 of a cursor not made for this account. */
    badCursor: object;
    /** The 429 of a token holding the most streams and long-polls open. */
    streamsCapped: object;
  };
}

/** GET /v1/events' first paragraph, for the collections it tells of (setUpDocs names the service's). */
const feedSummary = (collections: string[]) =>
  `Every change to the account's ${listed(collections)}, oldest first, in the order stored: each a CloudEvents 1.0 entry. Page on with the X-Next-Cursor of each answer as \`after\` (or the \`id\` of the last entry you handled); cursors are opaque, belong to the account, and stay valid for good. Read from your last cursor after any interruption and you miss nothing.`;

/** Tags and the two ways of sending the token, for GET /v1/events. */
export const ApiFeed = () => applyDecorators(ApiTags('events'), ApiBearerAuth(), ApiSecurity('access_token'));

/**
 * GET /v1/events: its parameters, the page in JSON and the stream of server-sent events as the two
 * media types of its 200 (the client's Accept chooses), and the errors of every /v1 route.
 */
export function ApiFeedOperation({ examples }: ApiFeedSpec) {
  return applyDecorators(
    ApiOperation({
      summary: "The account's changes: a change feed",
      description: [
        feedSummary(['records']),
        '`wait` long-polls: with nothing after the cursor, the answer waits for news up to that many seconds, then answers an empty page with the cursor sent.',
        `With \`Accept: text/event-stream\` the same entries come as server-sent events: \`id:\` the entry's cursor, \`event:\` its type, \`data:\` the entry; a comment (\`: idle\`) at least every 15 s while there is nothing new. Resume with Last-Event-ID (as EventSource sends it) or \`after\`. \`limit\` and \`wait\` do not apply to a stream.`,
        'A `*.erased` entry means: delete every copy you keep of that record, including values read earlier.',
      ].join('\n\n'),
    }),
    ApiQuery({
      name: 'after',
      required: false,
      schema: FEED_CURSOR,
      description:
        "a cursor this account got from the feed: the X-Next-Cursor of an answer, or an entry's id; the entries after it. Absent: from the beginning",
      // No example: "Try it out" would send it, and the example cursor is no account's.
    }),
    ApiQuery({
      name: 'limit',
      required: false,
      schema: { type: 'integer', minimum: 1, maximum: FEED_LIMIT.max, default: FEED_LIMIT.default },
      description: 'entries per page at most',
      example: FEED_LIMIT.default,
    }),
    ApiQuery({
      name: 'wait',
      required: false,
      schema: { type: 'integer', minimum: 0, maximum: FEED_MAX_WAIT_SECONDS, default: 0 },
      description: 'seconds to wait for news when there is nothing after the cursor; 0 answers at once',
      example: 0,
    }),
    ApiHeader({
      name: 'Last-Event-ID',
      required: false,
      description:
        'with Accept: text/event-stream: the id of the last event received, to resume after it (EventSource sends it when it reconnects); it takes precedence over `after`',
      schema: FEED_CURSOR,
    }),
    successResponse(
      200,
      "a page of the account's changes, or (Accept: text/event-stream) a stream of them",
      200,
      { type: 'array', items: ref('FeedEntry') },
      examples.entries,
      {
        headers: {
          'X-Next-Cursor': {
            description: "the cursor after this page's last entry (the `after` of the next page); the one sent when the page is empty. Not on a stream",
            schema: FEED_CURSOR,
            example: examples.cursor,
          },
        },
        alternatives: {
          'text/event-stream': {
            schema: {
              type: 'string',
              description:
                'server-sent events: each entry as `id: <cursor>`, `event: <type>`, `data: <the entry in JSON>`, and `: idle` comments while there is nothing new',
            },
            example: examples.stream,
          },
        },
      },
    ),
    ...[400, 401, 413, 417, 500, 503].map((status) => errorResponse(status, status === 400 ? examples.badCursor : undefined)),
    errorResponse(
      429,
      examples.streamsCapped,
      `${ERRORS[429].description}; or, for a stream or a long-poll (\`wait\`), this access token or its account holds the most of them open at once (FEED_STREAMS_PER_TOKEN, FEED_STREAMS_PER_ACCOUNT): close one first`,
    ),
  );
}

/**
 * Serves the document at /docs-json (in the service's JSON conventions) and its UI at /docs; `specs`
 * give the resources: their tags, their answers, the change feed's kinds of entry.
 */
export function setUpDocs(app: NestExpressApplication, specs: ApiRecordSpec[]): void {
  const collections = collectionsOf(specs);
  const builder = new DocumentBuilder()
    .setTitle('Profiles and customers service')
    .setDescription(
      'Business profiles and customers for an invoicing platform. Every /v1 request carries an access token, as ?access_token=… or as Authorization: Bearer …; every answer is application/json; charset=UTF-8.',
    )
    .setVersion('1')
    // Relative: the service at the address this document was fetched from, wherever it runs.
    .addServer('/', 'this service')
    // The header first: Swagger UI's Authorize dialog offers them in this order, and a query token shows in the request URL on screen.
    // Tokens are opaque strings, not JWTs: no bearerFormat (Nest's default says JWT).
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: undefined, description: 'the access token as Authorization: Bearer <token>' })
    .addApiKey({ type: 'apiKey', in: 'query', name: 'access_token', description: 'the access token as a query parameter' }, 'access_token');
  specs.forEach((spec, i) => builder.addTag(collections[i], spec.tag));
  const config = builder
    .addTag('events', `The change feed: every change to the account's ${listed(collections)}, for the platform's other services to follow`)
    .addTag('operations', 'Health and metrics, outside /v1 and without a token')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  // Health and metrics take no token: said as an empty requirement, not left to a default.
  for (const operations of Object.values(document.paths))
    for (const operation of Object.values(operations as Record<string, { tags?: string[]; security?: object[] }>))
      if (operation.tags?.includes('operations')) operation.security = [];
  // The feed's decorator is the class's, made before the kinds are known: its operation names them here.
  const feed = document.paths['/v1/events']?.get;
  if (feed?.description) feed.description = feed.description.replace(feedSummary(['records']), feedSummary(collections));
  const schemas = (document.components ??= {}).schemas ?? {};
  // Request bodies refuse any field they do not list.
  for (const schema of Object.values(schemas)) (schema as SchemaObject).additionalProperties = false;
  const answers = specs.flatMap(({ answers: { full, short } }) => [full, ...(short ? [short] : [])]);
  document.components.schemas = {
    ...schemas,
    ...Object.fromEntries(answers.map((answer) => [answer.name, recordSchema(answer)])),
    ...RESPONSE_SCHEMAS,
    ...ERROR_SCHEMAS,
    FeedEntry: feedEntrySchema(specs.map((spec) => spec.resource.toLowerCase())),
  };
  SwaggerModule.setup('docs', app, document, { raw: false });
  app
    .getHttpAdapter()
    .getInstance()
    .get('/docs-json', (_req: Request, res: Response) => sendJson(res, 200, document));
}
