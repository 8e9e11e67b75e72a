import { feedDataSchemaOf } from '../docs/feed-entry';
import type { ApiFeedSpec } from '../docs/openapi';
import type { FeedEntry } from './feed.queries';

const ADA = '6f0c9a7e-5b1d-4e2f-8a3c-1d2e3f4a5b6c';
const ERASED = '9d4b2a61-7c3e-4f80-b1a2-5e6f7a8b9c0d';

/** A CloudEvents entry as the feed serves it; the cursors are made up, as no account's. */
const entry = (id: string, type: string, subject: string, time: string, revision: number, changes: FeedEntry['data']['changes']): FeedEntry => ({
  specversion: '1.0',
  id,
  source: `/v1/${type.split('.')[0]}s`,
  type,
  subject,
  time,
  datacontenttype: 'application/json',
  dataschema: feedDataSchemaOf(type.split('.')[0]),
  data: { revision, changes },
});

/**
 * A page as a consumer meets it: a customer created, updated and deleted, and another created and
 * later erased, whose created entry therefore shows null for each value.
 */
const ENTRIES: FeedEntry[] = [
  entry('AotxzCRme-rkfmxi--XJ0Y24RI1ifuxW', 'customer.created', ADA, '2026-11-22T03:11:25.920Z', 0, {
    name: { from: '', to: 'Ada Lovelace' },
    email: { from: '', to: 'ada@example.com' },
    mobile: { from: '', to: '09121234567' },
  }),
  entry('TncbCLC1yxQUWQUcslLFmYrWXt_unrrV', 'customer.updated', ADA, '2026-11-22T03:11:32.200Z', 1, { mobile: { from: '09121234567', to: '09351112233' } }),
  entry('_nxqfVEwkfsauHUq5TAmfV8Dn-1rrBea', 'customer.created', ERASED, '2026-11-22T03:12:02.514Z', 0, { name: null, email: null }),
  entry('F2dJfbY8vt6y9b2o6aWWQ2mAIXvozp2u', 'customer.deleted', ADA, '2026-11-22T03:13:40.067Z', 2, {}),
  entry('qUHH1H5LfHiPRwZXGN2QjpD1Bf2yDwZt', 'customer.erased', ERASED, '2026-11-22T03:15:11.308Z', 1, {}),
];

/** GET /v1/events in the OpenAPI document (docs/openapi.ts). */
export const FEED_API: ApiFeedSpec = {
  examples: {
    entries: ENTRIES,
    stream: `retry: 1000\n\n${ENTRIES.slice(0, 2)
      .map((e) => `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
      .join('')}: idle\n\n`,
    cursor: ENTRIES[ENTRIES.length - 1].id,
    badCursor: {
      success: false,
      status: 400,
      error: {
        code: 'VALIDATION_FAILED',
        message: 'The request has invalid fields.',
        details: [{ field: 'after', message: 'after must be a cursor the feed gave this account (X-Next-Cursor, or an entry id)' }],
      },
    },
    streamsCapped: {
      success: false,
      status: 429,
      error: {
        code: 'RATE_LIMITED',
        message: 'This access token has 16 change-feed event streams or long-polls open, the most allowed at once: close one before opening another.',
      },
    },
  },
};
