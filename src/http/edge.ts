import type { NextFunction, Response } from 'express';
import helmet from 'helmet';
import { randomUUID } from 'node:crypto';
import { Refusal, validationFailed } from '../errors';
import { ApiError } from './api-error';
import { Logger, logRequest } from '../logging/logging';
import type { Metrics } from '../metrics/metrics';
import { BODY_LIMIT_BYTES } from './json-body.middleware';
import type { ServiceRequest } from './request-context';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Past Node's own limit (1,000), the query parser drops parameters silently: refused instead. */
export const MAX_QUERY_PARAMETERS = 1000;

/**
 * helmet's defaults, except `upgrade-insecure-requests`: on a plain http port it made browsers fetch
 * the /docs page's scripts over https, leaving the page blank at any address but localhost.
 */
const HELMET = { contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } };

/**
 * helmet's headers, worked out once: they are constant, so setting the list on each answer is the
 * same as running its dozen middlewares per request, at a fraction of the cost.
 */
function securityHeaders(): [string, string][] {
  const headers = new Map<string, string>();
  const res = { setHeader: (name: string, value: unknown) => headers.set(name, String(value)), removeHeader: (name: string) => headers.delete(name) };
  helmet(HELMET)({} as never, res as never, () => undefined);
  return [...headers];
}

/**
 * The front of every request, in one Express layer: the request id, the security headers, the log
 * line and metrics once the answer is done, then what can be refused from the request line and
 * headers alone, before anything reads a body. Everything after it can answer, so everything is seen.
 */
export function edgeMiddleware(logger: Logger, metrics: Metrics) {
  const headers = securityHeaders();
  return (req: ServiceRequest, res: Response, next: NextFunction): void => {
    const started = performance.now();
    const sent = req.headers['x-request-id'];
    req.requestId = typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    for (const [name, value] of headers) res.setHeader(name, value);
    res.on('close', () => {
      const ms = performance.now() - started;
      metrics.observeRequest(req, res, ms / 1000);
      logRequest(logger, req, res, ms);
    });
    next(refusal(req));
  };
}

/** Why a request is refused on its request line and headers alone, or undefined. */
function refusal(req: ServiceRequest): ApiError | Refusal | undefined {
  const { url } = req;
  if (url.includes('%')) {
    try {
      decodeURIComponent(req.path);
    } catch {
      // A path with broken percent-encoding names no route and no record: 404, like any unknown path.
      return new ApiError('NOT_FOUND', `No route for ${req.method} a path with malformed percent-encoding.`);
    }
  }
  const question = url.indexOf('?');
  if (question >= 0 && countParameters(url, question) > MAX_QUERY_PARAMETERS) {
    return validationFailed([{ field: '(query)', message: `the query has more than ${MAX_QUERY_PARAMETERS} parameters` }]);
  }
  const expect = req.headers.expect;
  if (expect !== undefined && expect.toLowerCase() !== '100-continue') {
    return new ApiError('EXPECTATION_FAILED', 'Expect: 100-continue is the only expectation the service meets.');
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > BODY_LIMIT_BYTES) {
    return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.');
  }
  return undefined;
}

function countParameters(url: string, question: number): number {
  let count = 1;
  for (let i = url.indexOf('&', question); i >= 0 && count <= MAX_QUERY_PARAMETERS; i = url.indexOf('&', i + 1)) count++;
  return count;
}
