/**
 * A client author's program, written against the types openapi-typescript generates from
 * /docs-json (`./schema`, made by test/e2e/typed-client.e2e-spec.ts next to a copy of this file,
 * then compiled with tsc --strict and run). It compiles only if the document describes every
 * parameter, header, body and answer it uses; it prints what the service answered, as JSON.
 * Not part of the project's own compilation (tsconfig.json excludes this folder): ./schema exists
 * only in the test's temporary directory.
 */
import createClient from 'openapi-fetch';
import type { paths } from './schema';

async function drive(baseUrl: string, token: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });

  const ada = await client.POST('/v1/customers', {
    body: { name: 'Ada Lovelace', email: 'ada@example.com', mobile: '09121234567', company: 'Analytical Engines', tel: 2166554433 },
  });
  if (!ada.data) throw new Error(`create: ${ada.response.status}`);
  const id = ada.data.data.Customer.id;
  const created = { status: ada.response.status, etag: ada.response.headers.get('ETag'), customer: ada.data.data.Customer };

  const babbage = await client.POST('/v1/customers', { body: { name: 'Charles Babbage', mobile: '۰۹۳۵۱۱۱۲۲۳۳', company: 'Difference Engines' } });
  if (!babbage.data) throw new Error(`create: ${babbage.response.status}`);

  const page1 = await client.GET('/v1/customers', { params: { query: { company: 'ENGINES', limit: 1, page: 1 } } });
  const page2 = await client.GET('/v1/customers', { params: { query: { company: 'engines', limit: 1, page: 2 } } });
  const byMobile = await client.GET('/v1/customers', { params: { query: { mobile: '09351112233' } } });
  if (!page1.data || !page2.data || !byMobile.data) throw new Error('list');
  const listed = {
    page1: page1.data.data.map((w) => w.Customer.name),
    page2: page2.data.data.map((w) => w.Customer.name),
    total: page1.response.headers.get('X-Total-Count'),
    byMobile: byMobile.data.data.map((w) => w.Customer.name),
  };

  const read = await client.GET('/v1/customers/{id}', { params: { path: { id } } });
  if (!read.data) throw new Error(`read: ${read.response.status}`);
  const etag = read.response.headers.get('ETag') ?? '';

  const updated = await client.PUT('/v1/customers/{id}', {
    params: { path: { id }, header: { 'If-Match': etag } },
    body: { company: 'Babbage & Co', tel: null },
  });
  if (!updated.data) throw new Error(`update: ${updated.response.status}`);

  // The same If-Match again: the record has moved on since.
  const stale = await client.PUT('/v1/customers/{id}', { params: { path: { id }, header: { 'If-Match': etag } }, body: { name: 'Ada King' } });
  const invalid = await client.POST('/v1/customers', { body: { name: 'Nobody' } });

  const deleted = await client.DELETE('/v1/customers/{id}', { params: { path: { id } } });
  if (!deleted.data) throw new Error(`delete: ${deleted.response.status}`);
  const gone = await client.GET('/v1/customers/{id}', { params: { path: { id } } });

  // The change feed: Ada's changes, read in pages of two, each page after the cursor of the one before.
  // Its 200 is JSON or, asked for with Accept: text/event-stream, a stream: this client takes the JSON.
  const feed = createClient<paths, `application/${string}`>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  const told: { type: string; revision: number; changes: Record<string, { from: string; to: string } | null> }[] = [];
  const cursors: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await feed.GET('/v1/events', { params: { query: { limit: 2, wait: 0, ...(after ? { after } : {}) } } });
    if (!page.data) throw new Error(`events: ${page.response.status}`);
    for (const entry of page.data.data) if (entry.subject === id) told.push({ type: entry.type, revision: entry.data.revision, changes: entry.data.changes });
    after = page.response.headers.get('X-Next-Cursor') ?? '';
    cursors.push(after);
    if (page.data.data.length < 2) break;
  }
  const badCursor = await feed.GET('/v1/events', { params: { query: { after: 'not-a-cursor' } } });

  return {
    created,
    listed,
    read: { etag, customer: read.data.data[0].Customer },
    updated: {
      status: updated.response.status,
      bodyStatus: updated.data.status,
      etag: updated.response.headers.get('ETag'),
      customer: updated.data.data.Customer,
    },
    stale: { status: stale.response.status, code: stale.error?.error.code },
    invalid: { status: invalid.response.status, code: invalid.error?.error.code, fields: invalid.error?.error.details?.map((d) => d.field) },
    deleted: { message: deleted.data.message, id: deleted.data.data.Customer.id },
    gone: { status: gone.response.status, code: gone.error?.error.code },
    feed: { told, pages: cursors.length, cursorsDistinct: new Set(cursors).size, badCursor: badCursor.error?.error.details?.map((d) => d.field) },
  };
}

drive(process.argv[2], process.argv[3]).then(
  (result) => process.stdout.write(JSON.stringify(result)),
  (error) => {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
