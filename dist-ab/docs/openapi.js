"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __setModuleDefault = (this && this.__setModuleDefault) || (Object.create ? (function(o, v) {
    Object.defineProperty(o, "default", { enumerable: true, value: v });
}) : function(o, v) {
    o["default"] = v;
});
var __importStar = (this && this.__importStar) || (function () {
    var ownKeys = function(o) {
        ownKeys = Object.getOwnPropertyNames || function (o) {
            var ar = [];
            for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) ar[ar.length] = k;
            return ar;
        };
        return ownKeys(o);
    };
    return function (mod) {
        if (mod && mod.__esModule) return mod;
        var result = {};
        if (mod != null) for (var k = ownKeys(mod), i = 0; i < k.length; i++) if (k[i] !== "default") __createBinding(result, mod, k[i]);
        __setModuleDefault(result, mod);
        return result;
    };
})();
Object.defineProperty(exports, "__esModule", { value: true });
exports.ApiOperations = exports.ApiResource = void 0;
exports.ApiRecordOperation = ApiRecordOperation;
exports.setUpDocs = setUpDocs;
const common_1 = require("@nestjs/common");
const swagger_1 = require("@nestjs/swagger");
const customer_body_1 = require("../customers/customer.body");
const customer_projection_1 = require("../customers/customer.projection");
const customer_view_1 = require("../customers/customer.view");
const EXAMPLE = __importStar(require("./examples"));
const field_rules_1 = require("../http/field-rules");
const json_response_1 = require("../http/json-response");
const profile_body_1 = require("../profiles/profile.body");
const profile_projection_1 = require("../profiles/profile.projection");
const profile_view_1 = require("../profiles/profile.view");
const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
function recordSchema(description, fields, extra = {}) {
    const properties = {
        id: { type: 'string', format: 'uuid', minLength: 36, maxLength: 36, description: 'made by the service' },
    };
    for (const field of fields) {
        properties[field] = field_rules_1.DIGIT_FIELDS.has(field)
            ? { type: 'string', pattern: '^[0-9]*$', description: 'digits, as a string; "" when not set' }
            : { type: 'string', description: '"" when not set' };
    }
    Object.assign(properties, extra, { created: { type: 'integer', description: 'seconds since the epoch' } });
    return { type: 'object', description, additionalProperties: false, required: Object.keys(properties), properties };
}
const RESPONSE_SCHEMAS = {
    Profile: recordSchema('A business profile, as every response shows it.', profile_view_1.PROFILE_FIELDS, {
        logo: { type: 'string', enum: [''], description: 'no operation sets it' },
        signature: { type: 'string', enum: [''], description: 'no operation sets it' },
        default: { type: 'integer', enum: [0, 1], description: "1 for the account's oldest live profile" },
    }),
    Customer: recordSchema('A customer as a create answers it: all twelve fields.', customer_view_1.CUSTOMER_FIELDS),
    CustomerShort: recordSchema('A customer as list, read and update answer it: the short field set.', customer_view_1.CUSTOMER_SHORT_FIELDS),
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
            changes: {
                type: 'object',
                description: 'each field the event changed, with values as reads show them ("" for no value); {} for a delete or an erasure. Once the record is erased, each field an event set maps to null: its values are gone for good',
                additionalProperties: {
                    type: 'object',
                    nullable: true,
                    additionalProperties: false,
                    required: ['from', 'to'],
                    properties: { from: { type: 'string' }, to: { type: 'string' } },
                },
            },
        },
    },
    Error: {
        type: 'object',
        description: 'The error envelope of every 4xx and 5xx answer.',
        additionalProperties: false,
        required: ['success', 'status', 'error'],
        properties: {
            success: { type: 'boolean', enum: [false] },
            status: { type: 'integer', description: 'the HTTP status again' },
            error: {
                type: 'object',
                additionalProperties: false,
                required: ['code', 'message'],
                properties: {
                    code: { type: 'string' },
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
    },
};
const REQUEST_ID = { 'X-Request-Id': { description: "the request's id: the client's own when well-formed; also the events' correlationId", schema: { type: 'string' } } };
const ETAG = { ETag: { description: 'the record\'s stream revision, quoted: "3"', schema: { type: 'string', pattern: '^"[0-9]+"$' } } };
const TOTAL_COUNT = { 'X-Total-Count': { description: 'how many there are, ignoring paging', schema: { type: 'string', pattern: '^[0-9]+$' } } };
const RETRY_AFTER = { 'Retry-After': { description: 'seconds to wait before trying again', schema: { type: 'integer' } } };
const ERRORS = {
    400: { codes: ['VALIDATION_FAILED', 'MALFORMED_JSON'], description: 'invalid fields or parameters (each named in details), or a body that is not a JSON object' },
    401: { codes: ['UNAUTHORIZED'], description: 'access_token missing or invalid, or an Authorization header not of the form Bearer <token>' },
    404: { codes: ['NOT_FOUND'], description: "no such record for this account (also another account's records and malformed ids)" },
    409: { codes: ['CONFLICT'], description: 'slug taken, an Idempotency-Key reused with another body, or the record changed by too many writers at once' },
    412: { codes: ['PRECONDITION_FAILED'], description: 'If-Match no longer matches the record: nothing was written' },
    413: { codes: ['PAYLOAD_TOO_LARGE'], description: 'body over 64 KiB' },
    415: { codes: ['UNSUPPORTED_MEDIA_TYPE'], description: 'body not application/json' },
    429: {
        codes: ['RATE_LIMITED'],
        description: "this access token's request allowance (or this address's failed authentications) is used up; each instance of the service counts its own, and with WORKERS=N each worker allows 1/N of the configured limit",
        retry: true,
    },
    500: { codes: ['INTERNAL'], description: 'unexpected failure; no internals are shown' },
    503: { codes: ['UNAVAILABLE'], description: 'saved, but the read models have not caught up yet, or a store is down', retry: true },
};
function errorResponse(status) {
    const { codes, description, retry } = ERRORS[status];
    return (0, swagger_1.ApiResponse)({
        status,
        description,
        headers: { ...REQUEST_ID, ...(retry ? RETRY_AFTER : {}) },
        content: {
            'application/json; charset=UTF-8': {
                schema: {
                    allOf: [
                        ref('Error'),
                        { type: 'object', properties: { status: { type: 'integer', enum: [status] }, error: { type: 'object', properties: { code: { type: 'string', enum: codes } } } } },
                    ],
                },
                example: EXAMPLE.ERRORS[status],
            },
        },
    });
}
function successResponse(status, description, bodyStatus, data, example, extra = {}) {
    const properties = {
        data,
        success: { type: 'boolean', enum: [true] },
        status: { type: 'integer', enum: [bodyStatus] },
        ...(extra.message ? { message: { type: 'string', enum: [extra.message] } } : {}),
    };
    return (0, swagger_1.ApiResponse)({
        status,
        description,
        headers: { ...REQUEST_ID, ...extra.headers },
        content: {
            'application/json; charset=UTF-8': {
                schema: { type: 'object', additionalProperties: false, required: Object.keys(properties), properties },
                example: { data: example, success: true, status: bodyStatus, ...(extra.message ? { message: extra.message } : {}) },
            },
        },
    });
}
const wrapper = (resource, schema) => ({
    type: 'object',
    additionalProperties: false,
    required: [resource],
    properties: { [resource]: schema },
});
const ApiResource = (resource) => (0, common_1.applyDecorators)((0, swagger_1.ApiTags)(`${resource.toLowerCase()}s`), (0, swagger_1.ApiSecurity)('access_token'), (0, swagger_1.ApiBearerAuth)());
exports.ApiResource = ApiResource;
const ApiOperations = () => (0, swagger_1.ApiTags)('operations');
exports.ApiOperations = ApiOperations;
const PAGING = (defaultLimit) => [
    (0, swagger_1.ApiQuery)({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: defaultLimit }, example: defaultLimit }),
    (0, swagger_1.ApiQuery)({ name: 'offset', required: false, schema: { type: 'integer', minimum: 0 }, description: 'records to skip; not with page', example: 0 }),
    (0, swagger_1.ApiQuery)({ name: 'page', required: false, schema: { type: 'integer', minimum: 1 }, description: 'page N is offset (N-1)*limit; not with offset', example: 1 }),
];
const MATCH_RULES = {
    'exact-ci': 'matches the whole value, ignoring case',
    exact: 'matches the whole value exactly; digits may be typed in ASCII, Persian or Arabic-Indic',
    'contains-ci': 'matches any record whose value contains it, ignoring case',
};
const FILTER_EXAMPLES = {
    email: 'ada@example.com',
    mobile: '09121234567',
    company: 'engines',
    tel: '02188776655',
    site: 'saffrontea',
    slug: 'SaffronTea',
};
const FILTERS = (filters) => Object.entries(filters).map(([name, kind]) => (0, swagger_1.ApiQuery)({
    name,
    required: false,
    schema: { type: 'string' },
    description: `filter: ${MATCH_RULES[kind]}; empty is ignored; filters combine with AND`,
    example: FILTER_EXAMPLES[name],
}));
const IF_MATCH = (0, swagger_1.ApiHeader)({
    name: 'If-Match',
    required: false,
    description: 'write only if the record is still at this revision: "3", a list "3", "4", or * (exists); compared strongly',
    schema: { type: 'string' },
    example: '"0"',
});
const ID = (resource) => (0, swagger_1.ApiParam)({
    name: 'id',
    description: 'the record id: 36 characters of UUID form (anything else answers 404)',
    schema: { type: 'string' },
    example: EXAMPLE.IDS[resource],
});
const BODIES = {
    Profile: { create: [profile_body_1.ProfileBody, EXAMPLE.PROFILE_CREATE], update: [profile_body_1.ProfileBody, EXAMPLE.PROFILE_UPDATE] },
    Customer: { create: [customer_body_1.CreateCustomerBody, EXAMPLE.CUSTOMER_CREATE], update: [customer_body_1.UpdateCustomerBody, EXAMPLE.CUSTOMER_UPDATE] },
};
const BODY = (resource, operation) => {
    const [type, value] = BODIES[resource][operation];
    return (0, swagger_1.ApiBody)({ type, examples: { [operation]: { summary: `${operation} a ${resource.toLowerCase()}`, value } } });
};
const ID_ONLY = { type: 'object', additionalProperties: false, required: ['id'], properties: { id: { type: 'string' } } };
function ApiRecordOperation(resource, operation) {
    const name = resource.toLowerCase();
    const full = ref(resource);
    const short = ref(resource === 'Customer' ? 'CustomerShort' : resource);
    const id = ID(resource);
    const example = {
        full: resource === 'Customer' ? EXAMPLE.CUSTOMER : EXAMPLE.PROFILE,
        short: resource === 'Customer' ? EXAMPLE.CUSTOMER_SHORT : EXAMPLE.PROFILE,
        updated: resource === 'Customer' ? EXAMPLE.CUSTOMER_UPDATED : EXAMPLE.PROFILE_UPDATED,
    };
    const errors = (...statuses) => [...statuses, 401, 429, 500].sort().map(errorResponse);
    switch (operation) {
        case 'create':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({
                summary: `Create a ${name}`,
                description: resource === 'Customer'
                    ? 'Every field is optional, but at least one of email and mobile must be filled in. Digit fields take a JSON integer >= 0 or a string of digits (ASCII, Persian or Arabic-Indic; answered as ASCII). Unknown and output-only fields are refused (400).'
                    : 'Every field is optional. The slug is unique across the service, ignoring case (409 when taken). Digit fields take a JSON integer >= 0 or a string of digits (ASCII, Persian or Arabic-Indic; answered as ASCII). Unknown and output-only fields are refused (400).',
            }), (0, swagger_1.ApiHeader)({
                name: 'Idempotency-Key',
                required: false,
                description: 'makes the create safe to retry: within 24 hours the same key and body answer the first response again and write nothing; 1 to 255 printable ASCII characters, no spaces',
                schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
                example: '0b6f2c1e-order-7f3a',
            }), BODY(resource, 'create'), successResponse(201, `the new ${name}`, 201, wrapper(resource, full), { [resource]: example.full }, { headers: ETAG }), ...errors(400, 409, 413, 415, 503));
        case 'list':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({
                summary: `List ${name}s`,
                description: 'Newest first (in creation order), stable across pages. Each filter says how it matches; X-Total-Count counts every match, ignoring paging.',
            }), ...PAGING(10), ...FILTERS((resource === 'Profile' ? profile_projection_1.profileProjection : customer_projection_1.customerProjection).schema.filters), successResponse(200, `a page of the account's ${name}s`, 200, { type: 'array', items: wrapper(resource, short) }, [{ [resource]: example.short }], {
                headers: TOTAL_COUNT,
            }), ...errors(400));
        case 'read':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({ summary: `Read a ${name}`, description: 'The record comes as the only item of an array.' }), id, (0, swagger_1.ApiQuery)({
                name: 'as_of',
                required: false,
                schema: { type: 'integer', minimum: 0 },
                description: 'epoch seconds: the record as it stood at the end of that second (404 if it did not exist then)',
                example: 1795312300,
            }), successResponse(200, `the ${name}`, 200, { type: 'array', minItems: 1, maxItems: 1, items: wrapper(resource, short) }, [{ [resource]: example.short }], {
                headers: ETAG,
            }), ...errors(400, 404));
        case 'history':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({
                summary: `A ${name}'s history`,
                description: "The record's events, oldest first, also after a delete; entries have no wrapper. X-Total-Count counts the events.",
            }), id, ...PAGING(100), successResponse(200, `the ${name}'s events`, 200, { type: 'array', items: ref('HistoryEntry') }, EXAMPLE.HISTORY[resource], { headers: TOTAL_COUNT }), ...errors(400, 404));
        case 'update':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({
                summary: `Update a ${name}`,
                description: `Fields not sent keep their values; "" or null clears one. Answers HTTP 200 with status 201 in the body.${resource === 'Customer' ? ' postal_code, fax, registration_number and economical_number cannot be changed (400); email or mobile must stay filled in.' : ''}`,
            }), id, IF_MATCH, BODY(resource, 'update'), successResponse(200, `the ${name} as changed (body status 201)`, 201, wrapper(resource, short), { [resource]: example.updated }, { headers: ETAG }), ...errors(400, 404, 409, 412, 413, 415, 503));
        case 'delete':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({ summary: `Delete a ${name}` }), id, IF_MATCH, successResponse(200, `the ${name} is deleted`, 200, wrapper(resource, ID_ONLY), { [resource]: { id: EXAMPLE.IDS[resource] } }, { message: `${resource} deleted successfully.` }), ...errors(400, 404, 409, 412, 503));
        case 'erase':
            return (0, common_1.applyDecorators)((0, swagger_1.ApiOperation)({
                summary: `Erase a ${name}'s data for good`,
                description: `The right to erasure: takes no body. Works on a live or a deleted ${name}; erasing it again answers the same. Afterwards the ${name} does not exist for any read, as-of read, list, update or delete (404)${resource === 'Profile' ? ', and its slug is free' : ''}; its history keeps every entry with null for each value, and ends with ${resource}Erased. No readable copy of the values stays in the service's stores.`,
            }), id, successResponse(200, `the ${name} is erased`, 200, wrapper(resource, ID_ONLY), { [resource]: { id: EXAMPLE.IDS[resource] } }, { message: `${resource} erased.` }), ...errors(400, 404, 503));
    }
}
function setUpDocs(app) {
    const config = new swagger_1.DocumentBuilder()
        .setTitle('Profiles and customers service')
        .setDescription('Business profiles and customers for an invoicing platform. Every /v1 request carries an access token, as ?access_token=… or as Authorization: Bearer …; every answer is application/json; charset=UTF-8.')
        .setVersion('1')
        .addApiKey({ type: 'apiKey', in: 'query', name: 'access_token', description: 'the access token as a query parameter' }, 'access_token')
        .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: undefined, description: 'the access token as Authorization: Bearer <token>' })
        .addTag('profiles', 'Business profiles: the seller identity printed on invoices')
        .addTag('customers', 'Customers: the buyer records')
        .addTag('operations', 'Health and metrics, outside /v1 and without a token')
        .build();
    const document = swagger_1.SwaggerModule.createDocument(app, config);
    const schemas = (document.components ??= {}).schemas ?? {};
    for (const schema of Object.values(schemas))
        schema.additionalProperties = false;
    document.components.schemas = { ...schemas, ...RESPONSE_SCHEMAS };
    swagger_1.SwaggerModule.setup('docs', app, document, { raw: false });
    app.getHttpAdapter().getInstance().get('/docs-json', (_req, res) => (0, json_response_1.sendJson)(res, 200, document));
}
//# sourceMappingURL=openapi.js.map