import { ArgumentsHost, Logger } from '@nestjs/common';
import express from 'express';
import request from 'supertest';
import { ApiExceptionFilter } from '../../src/http/api-exception.filter';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';

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
