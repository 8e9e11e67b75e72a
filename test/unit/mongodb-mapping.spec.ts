import fc from 'fast-check';
import {
  BSON,
  MongoBulkWriteError,
  MongoClient,
  MongoClientClosedError,
  MongoDriverError,
  MongoNetworkError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  type WriteError,
} from 'mongodb';
import { comparePositions, START } from '../../src/event-store/event-store.port';
import {
  escapeRegex,
  findFilter,
  fromMongoCheckpoint,
  fromMongoDocument,
  indexesFor,
  positionKey,
  readModelCollection,
  toMongoCheckpoint,
  toMongoDocument,
} from '../../src/read-store/mongodb-mapping';
import { duplicateKeyFailures, isDuplicateKey, mongoClientOptions, translateMongoError } from '../../src/storage/mongodb-client';
import { readsSubstrings, substringQuery, substringTokens } from '../../src/read-store/substrings';
import type { CollectionSchema, ReadDocument } from '../../src/read-store/read-store.port';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';

const schema: CollectionSchema = { name: 'customers', filters: { email: 'exact-ci', tel: 'exact', company: 'contains-ci' } };
const query = (filters: Record<string, string>) => ({ accountId: 'acc', filters, order: 'newest' as const, offset: 0, limit: 10 });

/**
 * The driver's errors, built with its internal constructors; write errors reduced to what is read
 * of them, and the result to its write concern error (none, or 64: w:majority timed out).
 */
const bulkError = (codes: number[], writeConcernCode?: number) =>
  new MongoBulkWriteError(
    {
      message: 'bulk failed',
      code: codes[0],
      writeErrors: codes.map((code, index) => ({ index, code }) as WriteError),
    },
    { getWriteConcernError: () => (writeConcernCode ? { code: writeConcernCode, errmsg: 'waiting for replication timed out' } : undefined) } as never,
  );

describe('MongoDB mapping', () => {
  it("names every read model's collection in one place, refusing odd names", () => {
    expect(readModelCollection('customers', 3)).toBe('rm_customers__g3');
    for (const bad of ['', 'Customers', 'a.b', 'a$b', '1abc', 'x y', 'a__b']) expect(() => readModelCollection(bad, 1)).toThrow(/Invalid/);
  });

  it('keeps a lowered copy of case-insensitive filter values beside the fields, and gives the document back as it was', () => {
    const doc: ReadDocument = {
      id: 'id-1',
      accountId: 'acc',
      revision: 3,
      seq: 42,
      deleted: false,
      created: 1_700_000_000,
      fields: { email: 'Ada@Example.COM', tel: '0101', company: 'ACME Ltd', name: 'Ada' },
    };
    const stored = toMongoDocument(schema, doc);
    expect(stored).toMatchObject({ _id: 'id-1', match: { email: 'ada@example.com', tel: '0101', company: 'acme ltd' } });
    expect(fromMongoDocument(stored)).toEqual(doc);
    expect(toMongoDocument(schema, { ...doc, fields: {} }).match).toEqual({ email: '', tel: '', company: '' });
  });

  it('indexes live documents by account in creation order, by each exact filter, and by substring token', () => {
    const exact = [
      { name: 'live_by_account', key: { accountId: 1, seq: 1 }, partialFilterExpression: { deleted: false } },
      { name: 'live_by_email', key: { accountId: 1, 'match.email': 1, seq: 1 }, partialFilterExpression: { deleted: false } },
      { name: 'live_by_tel', key: { accountId: 1, 'match.tel': 1, seq: 1 }, partialFilterExpression: { deleted: false } },
    ];
    expect(indexesFor(schema, { substrings: true })).toEqual([
      ...exact,
      { name: 'live_by_substrings', key: { substrings: 1, seq: 1 }, partialFilterExpression: { deleted: false } },
    ]);
    // A generation made before the substring index came: its documents have no tokens to index.
    expect(indexesFor(schema, { substrings: false })).toEqual(exact);
  });

  it("keeps a live document's substring tokens (account-scoped pieces of its contains-ci values), none for a deleted one", () => {
    const doc = { id: 'id-1', accountId: 'acc', revision: 0, seq: 1, deleted: false, created: 1, fields: { company: 'ACME' } };
    const tokens = toMongoDocument(schema, doc).substrings!;
    expect(tokens).toEqual(substringTokens('acc', ['acme']).split(' '));
    expect(tokens).toHaveLength(4 + 3 + 2); // a, c, m, e; ac, cm, me; acm, cme
    expect(toMongoDocument(schema, { ...doc, deleted: true }).substrings).toEqual([]);
    expect(toMongoDocument({ name: 'people', filters: { email: 'exact-ci' } }, doc)).not.toHaveProperty('substrings');
  });

  it('asks, where the generation has the index, for every token of a substring filter besides its $regex', () => {
    const filter = findFilter('customers', schema, query({ company: 'AcMe' }), { substrings: true });
    expect(filter).toEqual({
      accountId: 'acc',
      deleted: false,
      'match.company': { $regex: 'acme' },
      substrings: { $all: substringQuery('acc', 0, 'acme').split(' ') },
    });
    expect((filter.substrings as { $all: string[] }).$all).toHaveLength(2); // acm, cme
    expect(findFilter('customers', schema, query({ company: 'AcMe' }))).not.toHaveProperty('substrings');
    expect(readsSubstrings(schema, ['company'])).toBe(true);
    expect(readsSubstrings(schema, ['company', 'email'])).toBe(false);
    expect(readsSubstrings(schema, [])).toBe(false);
  });

  it('builds filters on live documents of the account, lowering case-insensitive values', () => {
    expect(findFilter('customers', schema, query({}))).toEqual({ accountId: 'acc', deleted: false });
    expect(findFilter('customers', schema, query({ email: 'A@B.io', tel: '0X', company: 'Ac.me(' }))).toEqual({
      accountId: 'acc',
      deleted: false,
      'match.email': 'a@b.io',
      'match.tel': '0X',
      'match.company': { $regex: 'ac\\.me\\(' },
    });
    expect(() => findFilter('customers', schema, query({ name: 'x' }))).toThrow(/no filter name/);
  });

  it('escapes user input so the regex matches exactly that text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string(), (text, around) => {
        const regex = new RegExp(escapeRegex(text));
        expect(regex.test(`${around}${text}${around}`)).toBe(true);
        expect(new RegExp(`^${escapeRegex(text)}$`).test(text)).toBe(true);
      }),
    );
    expect(new RegExp(escapeRegex('a.*(')).test('abc')).toBe(false);
  });

  it('writes a NUL in a contains filter as the escape \\x00: MongoDB refuses a pattern holding the byte', () => {
    const filter = findFilter('customers', schema, query({ company: 'a\0B' }));
    const pattern = (filter['match.company'] as { $regex: string }).$regex;
    expect(pattern).toBe('a\\x00b');
    expect(pattern.includes('\0')).toBe(false);
    expect(new RegExp(pattern).test('xa\0by')).toBe(true);
    expect(new RegExp(pattern).test('xa0by')).toBe(false);
  });

  it('gives positions keys that sort as the positions do, START first', () => {
    const part = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    const position = fc.record({ commit: part, prepare: part });
    fc.assert(
      fc.property(position, position, (a, b) => {
        const byKey = positionKey(a) < positionKey(b) ? -1 : positionKey(a) > positionKey(b) ? 1 : 0;
        expect(byKey).toBe(comparePositions(a, b));
        expect(positionKey(START) < positionKey(a)).toBe(true);
      }),
    );
  });

  it('keeps checkpoint positions as exact decimal strings', () => {
    const position = { commit: 18446744073709551615n, prepare: 18446744073709551614n };
    const stored = toMongoCheckpoint(position);
    expect(stored).toMatchObject({ commit: '18446744073709551615', prepare: '18446744073709551614' });
    expect(fromMongoCheckpoint(stored)).toEqual(position);
    expect(fromMongoCheckpoint({})).toBeNull();
  });

  it('tells guarded upserts that lost to a newer document from real failures', () => {
    expect(duplicateKeyFailures(bulkError([11000, 11000]))).toEqual([0, 1]);
    expect(duplicateKeyFailures(bulkError([11000, 121]))).toBeNull();
    // Duplicates beside a write concern error: the other writes may not have reached a majority.
    expect(duplicateKeyFailures(bulkError([11000, 11000], 64))).toBeNull();
    expect(translateMongoError(bulkError([11000, 11000], 64))).toBeInstanceOf(StoreUnavailableError);
    expect(duplicateKeyFailures(new Error('other'))).toBeNull();
    expect(isDuplicateKey(new MongoServerError({ message: 'dup', code: 11000 }))).toBe(true);
    expect(isDuplicateKey(new MongoServerError({ message: 'other', code: 2 }))).toBe(false);
  });

  it('turns network failures into StoreUnavailableError and leaves the rest alone', () => {
    const lost = translateMongoError(new MongoNetworkError('connection reset'));
    expect(lost).toBeInstanceOf(StoreUnavailableError);
    expect((lost as Error).message).toBe('MongoDB is unreachable: connection reset');
    const server = new MongoServerError({ message: 'bad', code: 2 });
    expect(translateMongoError(server)).toBe(server);
  });

  it('turns a connection pool that gave no connection, or a server or client closing, into StoreUnavailableError', () => {
    // The driver's own classes (lib/cmap/errors.js), which its index does not export.
    const { WaitQueueTimeoutError, PoolClosedError } = jest.requireActual<{
      WaitQueueTimeoutError: new (message: string, address: string) => Error;
      PoolClosedError: new (pool: { address: string }) => Error;
    }>('mongodb/lib/cmap/errors');
    const busy = translateMongoError(new WaitQueueTimeoutError('Timed out while checking out a connection from connection pool', '127.0.0.1:27017'));
    expect(busy).toBeInstanceOf(StoreUnavailableError);
    expect((busy as Error).message).toBe('MongoDB is unreachable: Timed out while checking out a connection from connection pool');
    expect(translateMongoError(new PoolClosedError({ address: '127.0.0.1:27017' }))).toBeInstanceOf(StoreUnavailableError);
    // The server or the client closing under an operation.
    expect(translateMongoError(new MongoServerClosedError())).toBeInstanceOf(StoreUnavailableError);
    expect(translateMongoError(new MongoClientClosedError())).toBeInstanceOf(StoreUnavailableError);
    // Another driver error is not the store's absence: it stays as it is.
    const misuse = new MongoDriverError('something else');
    expect(translateMongoError(misuse)).toBe(misuse);
  });

  it('sees through the bulk write error the driver wraps around a lost connection or a timeout', () => {
    // What the driver throws when a bulk write gets no answer (lib/bulk/common.js: "a driver related error not a bulk op error").
    for (const cause of [new MongoNetworkError('connection 3 to 127.0.0.1:27017 closed'), new MongoOperationTimeoutError('Timed out during socket read')]) {
      const wrapped = new MongoBulkWriteError(cause, {} as never);
      expect(translateMongoError(wrapped)).toBeInstanceOf(StoreUnavailableError);
    }
    // A driver's own refusal, wrapped the same way, is a bug, not an outage: it stays what it is.
    const misuse = new MongoBulkWriteError(new BSON.BSONError('Document is larger than the maximum size 16777216'), {} as never);
    expect(translateMongoError(misuse)).toBe(misuse);
    // A server's error for the whole command, wrapped so, by its code: not primary is unavailable, a bad value a bug.
    const notPrimary = new MongoServerError({ message: 'not primary', code: 10107, codeName: 'NotWritablePrimary', ok: 0 });
    expect(translateMongoError(new MongoBulkWriteError(notPrimary, {} as never))).toBeInstanceOf(StoreUnavailableError);
    const badValue = new MongoBulkWriteError(new MongoServerError({ message: 'bad', code: 2, codeName: 'BadValue', ok: 0 }), {} as never);
    expect(translateMongoError(badValue)).toBe(badValue);
    // A write concern error the server reported during shutdown, as the driver wraps it.
    expect(translateMongoError(new MongoBulkWriteError({ message: 'interrupted at shutdown', code: 11600 }, {} as never))).toBeInstanceOf(
      StoreUnavailableError,
    );
    // A write the server refused stays what it is: a bug, not an outage.
    const refused = bulkError([121]);
    expect(translateMongoError(refused)).toBe(refused);
  });

  it('turns the codes of a server shutting down, stepping down or out of time into StoreUnavailableError', () => {
    for (const code of [91, 189, 10107, 11600, 11602, 13435, 13436, 50, 262]) {
      expect(translateMongoError(new MongoServerError({ message: `code ${code}`, code }))).toBeInstanceOf(StoreUnavailableError);
    }
    expect(translateMongoError(new MongoServerSelectionError('no server', {} as never))).toBeInstanceOf(StoreUnavailableError);
  });

  it("turns an overloaded server's refusal into StoreUnavailableError, whatever its code", () => {
    // Labelled by the server, or by the driver for a connection refused under load (mongodb 7.9 cmap/connect.ts).
    const overloaded = new MongoServerError({ message: 'rate limit exceeded', code: 462, errorLabels: ['SystemOverloadedError', 'RetryableError'] });
    expect(translateMongoError(overloaded)).toBeInstanceOf(StoreUnavailableError);
    // As a bulk write throws it (mongodb 7.9 src/bulk/common.ts:610).
    const wrapped = new MongoBulkWriteError(overloaded, {} as never);
    expect(translateMongoError(wrapped)).toBeInstanceOf(StoreUnavailableError);
    const unlabelled = new MongoServerError({ message: 'rate limit exceeded', code: 462 });
    expect(translateMongoError(unlabelled)).toBe(unlabelled);
  });

  it('bounds every operation by the store timeout and asks for journaled, majority-acknowledged writes', () => {
    // Parsed by the driver itself; no connection is made.
    const client = new MongoClient('mongodb://127.0.0.1:1/', mongoClientOptions(1234));
    expect(client.options).toMatchObject({ serverSelectionTimeoutMS: 1234, connectTimeoutMS: 1234, waitQueueTimeoutMS: 1234, socketTimeoutMS: 1234 });
    expect(client.options.writeConcern).toMatchObject({ w: 'majority', journal: true, wtimeoutMS: 617 });
    // The driver's retries of an overloaded server's refusal wait as long as the server says, unbounded.
    expect(new MongoClient('mongodb://127.0.0.1:1/?maxAdaptiveRetries=5', mongoClientOptions(1234)).options.maxAdaptiveRetries).toBe(1);
  });

  it('reads from the primary with majority read concern and waits for a majority, whatever the URI asks', () => {
    const uri = 'mongodb://127.0.0.1:1/?readPreference=secondary&readConcernLevel=local&w=1&journal=false&wtimeoutMS=0';
    const client = new MongoClient(uri, mongoClientOptions(5000));
    expect(client.options.readPreference.mode).toBe('primary');
    expect(client.options.readConcern).toMatchObject({ level: 'majority' });
    expect(client.options.writeConcern).toMatchObject({ w: 'majority', journal: true, wtimeoutMS: 2500 });
  });
});
