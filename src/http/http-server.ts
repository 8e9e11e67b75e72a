import { createServer, IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorCode } from './api-error';
import { STATUS } from './api-exception.filter';
import type { Logger } from '../logging/logging';
import { JSON_CONTENT_TYPE } from './json-response';

/** The limits of the HTTP server itself: slow or idle clients are cut off, connections are capped. */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

/** Node's parser errors, as the envelope names them. */
const PARSER_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { code: 'HEADERS_TOO_LARGE', message: 'The request line and headers are larger than 16 KiB.' },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', message: 'The request was not received in time.' },
};
const MALFORMED = {
  code: 'MALFORMED_REQUEST' as const,
  message: 'The request is not well-formed HTTP/1.1 (its framing, or a byte outside ASCII in its line or headers: percent-encode it).',
};

/**
 * The HTTP server the app runs on, with its timeouts and connection cap. What Node answers on its
 * own, before the app sees a request (a request it cannot parse, headers too large, an Expect it
 * does not know), is answered in the error envelope here, with a log line each.
 */
export function createHttpServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ServerLimits,
  logger: Logger,
  /** The classes the server makes requests and responses of. */
  messages: Pick<ServerOptions, 'IncomingMessage' | 'ServerResponse'>,
): Server {
  const server = createServer(
    {
      ...messages,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Timeouts are checked this often: Node's default of 30 s would let a slow client hold on longer than the timeouts say.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
    handler,
  );
  // The cap is kept here, not in server.maxConnections: in a cluster worker (WORKERS) Node hands a
  // connection past maxConnections back to the primary, which deals it to the next worker, round
  // and round while every worker is full, instead of closing it.
  let open = 0;
  server.prependListener('connection', (socket: Socket) => {
    if (open >= limits.maxConnections) return void socket.destroy();
    open++;
    socket.once('close', () => open--);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket & { _httpMessage?: ServerResponse }) => {
    if (error.code === 'ECONNRESET') return void socket.destroy();
    const { code, message } = PARSER_ERRORS[error.code ?? ''] ?? MALFORMED;
    const status = STATUS[code];
    logger.warn(
      { remoteAddress: socket.remoteAddress, res: { statusCode: status }, err: { code: error.code } },
      `Refused a request Node could not take: ${status} ${code}`,
    );
    // A closed connection, or one whose request the app is answering (a body broken after its headers), can take no other answer.
    if (!socket.writable || socket._httpMessage) return void socket.destroy();
    const body = JSON.stringify({ success: false, status, error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${statusText(status)}\r\nContent-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  // Expect: 100-continue is answered when the body is about to be read (json-body.middleware.ts), so
  // a request refused on its headers (no token, too large) never gets a 100 Continue; any other
  // expectation goes to the app too, which refuses it in the envelope (edge.ts).
  server.on('checkContinue', (req, res) => server.emit('request', req, res));
  server.on('checkExpectation', (req, res) => server.emit('request', req, res));
  return server;
}

const statusText = (status: number) => ({ 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' })[status] ?? 'Bad Request';
