import type { SchemaObject } from '@nestjs/swagger';
import { ref } from './responses';

/** The change feed's entries in the OpenAPI document, and the shape their `dataschema` names. */

export const FEED_CURSOR: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9_-]{32}$', description: 'an opaque cursor of this account' };

/**
 * The version of the feed's `data` shape ({revision, changes} with a kind's fields). It moves on only
 * with a breaking change (docs/api.md "Compatibility"), and with it every entry's `dataschema`.
 */
export const FEED_DATA_VERSION = 1;

/** The `dataschema` of a feed entry about a record of kind `noun` (customer, profile): a URI that names its shape and version. */
export const feedDataSchemaOf = (noun: string) => `urn:profiles-customers-service:feed-data:${noun}:v${FEED_DATA_VERSION}`;

/**
 * One change feed entry, a CloudEvents 1.0 event in JSON, about records of the kinds `nouns`
 * (customer, profile): the feed tells of every record kind the service keeps.
 */
export function feedEntrySchema(nouns: string[]): SchemaObject {
  return {
    type: 'object',
    description:
      'One change to a record of the account, as a CloudEvents 1.0 event in JSON (structured mode). Entries come oldest first, in the order the changes were stored; each appears once in an uninterrupted read. A `*.erased` entry means: delete every copy you keep of that record, values read earlier included; once a record is erased, its earlier entries keep their type, id, subject, time and revision, and every value in `changes` is null.',
    additionalProperties: false,
    required: ['specversion', 'id', 'source', 'type', 'subject', 'time', 'datacontenttype', 'dataschema', 'data'],
    properties: {
      specversion: { type: 'string', enum: ['1.0'] },
      id: {
        ...FEED_CURSOR,
        description:
          "the entry's cursor: send it as `after` (or Last-Event-ID) to read on after this entry. Unique in the account's feed, the same every time the entry is read",
      },
      source: { type: 'string', enum: nouns.map((noun) => `/v1/${noun}s`), description: 'the collection of the record' },
      type: {
        type: 'string',
        enum: nouns.flatMap((noun) => ['created', 'updated', 'deleted', 'erased'].map((verb) => `${noun}.${verb}`)),
        description: 'what happened to the record',
      },
      subject: { type: 'string', format: 'uuid', description: "the record's id" },
      time: { type: 'string', format: 'date-time', description: 'when the change was stored (UTC, milliseconds), as in its history' },
      datacontenttype: { type: 'string', enum: ['application/json'] },
      dataschema: {
        type: 'string',
        format: 'uri',
        enum: nouns.map(feedDataSchemaOf),
        description: `the shape of \`data\`: its kind of record and the version of that shape (now ${FEED_DATA_VERSION}). It changes only with a breaking change, announced ahead (see "Compatibility" in the API guide): check it, and stop rather than misread an entry whose shape you do not know`,
      },
      data: {
        type: 'object',
        additionalProperties: false,
        required: ['revision', 'changes'],
        properties: {
          revision: { type: 'integer', minimum: 0, description: "the record's revision after the change: 0 for its create, one more per change (its ETag)" },
          changes: {
            allOf: [ref('Changes')],
            description:
              'the fields the change set, each {from, to}, as in the record\'s history: a create lists every field it set (from ""), an update the fields it changed, a delete or an erasure none ({}). Once the record is erased, each field maps to null',
          },
          imported: ref('Imported'),
        },
      },
    },
  };
}
