import { ArgumentsHost, Logger } from '@nestjs/common';
import express from 'express';
import request from 'supertest';
import { ApiExceptionFilter } from '../../src/http/api-exception.filter';
import { conflict, contended, notFound, Refusal, validationFailed } from '../../src/errors';
import { StreamTombstonedError, UnreadableEventError } from '../../src/event-store/event-store.port';
import { ReadModelsBehindError } from '../../src/projections/read-models-behind.error';
import { StoreFullError, StoreUnavailableError, WriteOutcomeUnknownError } from '../../src/storage/store-unavailable.error';

/**
 * What a client sees when an adapter cannot reach its server. No server can be stopped on demand
 * here, so the adapter's error is thrown from a route of a bare Express app and answered by the
 * service's own exception filter, over a real socket.
 */
describe('a store that cannot be reached, as the client sees it', () => {
  const app = express();
  app.get('/boom', () => {
    throw new StoreUnavailableError('MongoDB', 'connect ECONNREFUSED 10.0.0.7:27017');
  });
  app.use((error: unknown, req: express.Request, res: express.Response, _next: express.NextFunction) => {
    const host = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) } as unknown as ArgumentsHost;
    new ApiExceptionFilter().catch(error, host);
  });

  it('answers 503 UNAVAILABLE with Retry-After, naming neither the store nor its address', async () => {
    // The operator's log line names them: caught here rather than printed among the test results.
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const res = await request(app).get('/boom');
    expect(warn.mock.calls).toEqual([['GET /boom answered 503: MongoDB is unreachable: connect ECONNREFUSED 10.0.0.7:27017']]);
    warn.mockRestore();
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.headers['content-type']).toBe('application/json; charset=UTF-8');
    expect(res.body).toEqual({
      success: false,
      status: 503,
      error: { code: 'UNAVAILABLE', message: 'The service cannot reach its storage right now; try again shortly.' },
    });
    expect(res.text).not.toMatch(/MongoDB|ECONNREFUSED|10\.0\.0\.7|at /);
  });
});

/** Only the filter knows statuses: each refusal of the domain and failure of a store, as answered over a socket. */
describe('the domain’s refusals and the stores’ failures, as answered', () => {
  const cases: [string, Error, number, string, string, string | undefined][] = [
    ['not found', notFound('Customer'), 404, 'NOT_FOUND', 'Customer not found.', undefined],
    [
      'invalid',
      validationFailed([{ field: 'email', message: 'email must be an email' }]),
      400,
      'VALIDATION_FAILED',
      'The request has invalid fields.',
      undefined,
    ],
    ['conflict', conflict('The slug "x" is already taken.'), 409, 'CONFLICT', 'The slug "x" is already taken.', undefined],
    ['too many writers', contended('Profile'), 409, 'CONFLICT', 'The profile is being changed by others right now; try again.', undefined],
    [
      'gone',
      new Refusal('gone', 'The customer this Idempotency-Key created has been erased.'),
      409,
      'CONFLICT',
      'The customer this Idempotency-Key created has been erased.',
      undefined,
    ],
    ['precondition', new Refusal('precondition_failed', 'Changed since.'), 412, 'PRECONDITION_FAILED', 'Changed since.', undefined],
    [
      'a stream removed by hand',
      new StreamTombstonedError('customer-1'),
      409,
      'CONFLICT',
      'This record was deleted from the event store (stream customer-1) and cannot be written again.',
      undefined,
    ],
    [
      'an event a newer version wrote',
      new UnreadableEventError('customer-1', 3, 'it is CustomerUpdated version 3, newer than the 2 this version of the service reads'),
      503,
      'UNAVAILABLE',
      'A change to this record cannot be read by this version of the service; try again later.',
      '5',
    ],
    [
      'read models behind a write',
      new ReadModelsBehindError('The change was saved, but not shown yet.', 1),
      503,
      'UNAVAILABLE',
      'The change was saved, but not shown yet.',
      '1',
    ],
    [
      'a write of unknown outcome',
      new WriteOutcomeUnknownError(new StoreUnavailableError('EventStoreDB', 'no answer within 5000 ms')),
      503,
      'UNAVAILABLE',
      'The service lost its storage while saving: the change may have been saved; retry it as it is.',
      '5',
    ],
    ['a full disk', new StoreFullError('SQLite', 'SQLITE_FULL'), 503, 'UNAVAILABLE', 'The service cannot reach its storage right now; try again shortly.', '5'],
  ];
  const app = express();
  app.get('/throw/:n', (req) => {
    throw cases[Number(req.params.n)][1];
  });
  app.post('/v1/customers', () => {
    throw new WriteOutcomeUnknownError(new StoreUnavailableError('EventStoreDB', 'no answer within 5000 ms'));
  });
  app.use((error: unknown, req: express.Request, res: express.Response, _next: express.NextFunction) => {
    const host = { switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }) } as unknown as ArgumentsHost;
    new ApiExceptionFilter().catch(error, host);
  });

  it.each(cases.map((c, n) => [c[0], n, ...c.slice(2)] as const))('answers %s', async (_, n, status, code, message, retryAfter) => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const res = await request(app).get(`/throw/${n}`);
    warn.mockRestore();
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, message });
    expect(res.headers['retry-after']).toBe(retryAfter);
  });

  it('answers a create of unknown outcome telling to retry with the same Idempotency-Key', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const res = await request(app).post('/v1/customers');
    warn.mockRestore();
    expect(res.status).toBe(503);
    expect(res.body.error.message).toBe('The service lost its storage while saving: the change may have been saved; retry with the same Idempotency-Key.');
  });
});
