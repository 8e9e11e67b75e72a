import { Agent, request } from 'node:http';
import { connect } from 'node:net';

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
    const outgoing = request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
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

export interface SocketExchange {
  /** Everything the server sent, as bytes decoded as latin1 (a status line and headers, then the body). */
  received: string;
  /** True when the server closed the connection before `waitMs` ran out. */
  closedByServer: boolean;
  ms: number;
}

/**
 * Bytes straight onto a TCP connection, for what no HTTP client will send: broken framing, raw
 * non-ASCII bytes, slow drips. `chunks` are written `gapMs` apart; the answer is collected until the
 * server closes the connection or `waitMs` passes.
 */
export function socketExchange(baseUrl: string, chunks: (string | Buffer)[], options: { gapMs?: number; waitMs: number }): Promise<SocketExchange> {
  const url = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const received: Buffer[] = [];
    let timers: NodeJS.Timeout[] = [];
    const finish = (closedByServer: boolean) => {
      timers.forEach(clearTimeout);
      timers = [];
      socket.destroy();
      resolve({ received: Buffer.concat(received).toString('latin1'), closedByServer, ms: Date.now() - started });
    };
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? finish(true) : reject(error)));
    socket.on('end', () => finish(true));
    socket.on('connect', () => {
      chunks.forEach((chunk, i) => timers.push(setTimeout(() => socket.writable && socket.write(chunk), i * (options.gapMs ?? 0))));
      timers.push(setTimeout(() => finish(false), options.waitMs));
    });
  });
}

/** The status, headers (lowercased names) and body of the first answer in `received`. */
export function parseAnswer(received: string): RawResponse {
  const end = received.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = received.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  const length = Number(headers['content-length'] ?? received.length);
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    text: Buffer.from(received.slice(end + 4), 'latin1')
      .subarray(0, length)
      .toString('utf8'),
  };
}
