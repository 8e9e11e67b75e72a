import { Agent, request } from 'node:http';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RawRequest {
  method: string;
  /** Path and query, sent as given (already encoded). */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/**
 * One request with nothing done for the caller: no encoding, no default headers, any bytes as the
 * body. What hostile-input and crash tests need and supertest does not give (it rewrites them).
 */
export function rawRequest(baseUrl: string, req: RawRequest, agent?: Agent): Promise<RawResponse> {
  const url = new URL(baseUrl);
  // Node frames a GET, DELETE or OPTIONS body with nothing unless told its length: the server would
  // then read it as the start of the next request on the connection.
  const headers = req.body === undefined ? req.headers : { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) };
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

/** A JSON request with the token as a Bearer header. */
export const jsonRequest = (method: string, path: string, token: string, body?: unknown, requestId?: string): RawRequest => ({
  method,
  path,
  headers: {
    authorization: `Bearer ${token}`,
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(requestId ? { 'x-request-id': requestId } : {}),
  },
  body: body === undefined ? undefined : JSON.stringify(body),
});
