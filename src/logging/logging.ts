import type { LoggerService } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingHttpHeaders } from 'node:http';
import { unescape } from 'node:querystring';
import { trace } from '@opentelemetry/api';
import pino, { DestinationStream, Logger, symbols } from 'pino';
import type { LogLevel } from '../config/config';

export type { Logger };

const REDACTED = '[REDACTED]';

/** Query parameters whose values say nothing about anyone: paging and time. Every other value is redacted. */
const PLAIN_PARAMETERS = new Set(['limit', 'offset', 'page', 'as_of']);

/**
 * `url` with the value of every query parameter replaced but paging's: the access token, and the
 * filters, whose values are personal data (an e-mail address, a mobile number) that an erasure
 * could not reach in a log. Names are decoded as the query parser decodes them, so `acc%65ss_token`
 * is redacted too; the names stay, to show what was asked.
 */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question < 0) return url;
  const params = url
    .slice(question + 1)
    .split('&')
    .map((param) => {
      const name = param.split('=', 1)[0];
      return PLAIN_PARAMETERS.has(unescape(name.replace(/\+/g, ' '))) || param === name ? param : `${name}=${REDACTED}`;
    });
  return `${url.slice(0, question + 1)}${params.join('&')}`;
}

/**
 * The request headers a log line keeps: an allow-list, since proxies add headers that repeat the
 * URL (X-Original-URI, Referer, ...) and so the token. Credentials show only that they were sent.
 */
const LOGGED_HEADERS = [
  'host',
  'user-agent',
  'content-type',
  'content-length',
  'content-encoding',
  'accept',
  'x-forwarded-for',
  'x-forwarded-proto',
  'if-match',
  'idempotency-key',
];
const CREDENTIAL_HEADERS = ['authorization', 'cookie'];

/** Any `access_token=...` in a logged value, whatever header it came in. */
const TOKEN_IN_VALUE = /(access(?:_|%5f)token=)[^&\s]*/gi;
const scrub = (value: string) => (value.includes('=') ? value.replace(TOKEN_IN_VALUE, `$1${REDACTED}`) : value);

function loggedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const logged: Record<string, string> = {};
  for (const name of LOGGED_HEADERS) {
    const value = headers[name];
    if (value !== undefined) logged[name] = scrub(String(value));
  }
  for (const name of CREDENTIAL_HEADERS) if (headers[name] !== undefined) logged[name] = REDACTED;
  return logged;
}

let lastMs = 0;
let lastTime = '';
/** pino's isoTime, formatted once per millisecond: under load several lines share one. */
function isoTime(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    lastTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return lastTime;
}

/**
 * The ids of the span a line is written in, as OpenTelemetry's log correlation names them, so an
 * operator can go from a log line to its trace. Without tracing there is no span: nothing is added.
 */
function traceIds(): object {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** How long a log line may wait in the buffer before it is written. */
const LOG_FLUSH_MS = 200;
/** The characters of log lines written at once. */
const LOG_BATCH_CHARS = 8192;

/**
 * Lines gathered here and handed to sonic-boom about 8 KiB at a time: sonic-boom measures the bytes
 * of everything it holds on every write (a copy of the whole batch, per line).
 */
class LineBatch implements DestinationStream {
  private lines: string[] = [];
  private chars = 0;

  constructor(private readonly out: ReturnType<typeof pino.destination>) {
    // What is gathered is written when the process exits, as pino has sonic-boom write what it holds.
    process.once('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= LOG_BATCH_CHARS) this.hand();
  }

  flush(): void {
    this.hand();
    this.out.flush();
  }

  /** What pino calls after a fatal line, and at exit. */
  flushSync(): void {
    // Ended by pino when the event loop emptied: written already.
    if ((this.out as unknown as { destroyed: boolean }).destroyed) return;
    this.hand();
    this.out.flushSync();
  }

  private hand(): void {
    if (this.lines.length === 0) return;
    this.out.write(this.lines.join(''));
    this.lines = [];
    this.chars = 0;
  }
}

/**
 * The service's one JSON logger: a line per object on stdout (or `destination`, for tests). Lines
 * are written in batches of about 8 KiB, and at least every 200 ms: a write per request line would
 * cost a system call each. What is left is written when the process exits.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  // logRequest writes its lines as these options make them: keep the two alike.
  const options = { level, base: { pid: process.pid }, timestamp: isoTime, mixin: traceIds };
  if (destination) return pino(options, destination);
  const stdout = new LineBatch(pino.destination({ dest: 1, sync: false }));
  setInterval(() => stdout.flush(), LOG_FLUSH_MS).unref();
  return pino(options, stdout);
}

/**
 * The info line of a request once its answer is done (so nothing per request at LOG_LEVEL=warn),
 * with the request id clients and events see. The URL and headers are written here, not by pino's
 * standard serializers, which log the raw URL and headers, token included.
 *
 * The line is the one `logger.info(fields, message)` writes (level, time, pid, the span's ids, the
 * fields, msg), made in one JSON.stringify and handed to the logger's destination: pino's
 * serialisation of it, key by key and merged with the mixin's, cost a read a tenth of its CPU.
 */
export function logRequest(logger: Logger, req: Request & { requestId?: string; accountId?: string }, res: Response, ms: number): void {
  if (!logger.isLevelEnabled('info')) return;
  const url = redactUrl(req.originalUrl);
  const error = res.locals?.error as LoggedError | undefined;
  const fields = JSON.stringify({
    ...traceIds(),
    requestId: req.requestId,
    req: { method: req.method, url, headers: loggedHeaders(req.headers), remoteAddress: req.socket.remoteAddress },
    res: { statusCode: res.statusCode, ...(error ? { error } : {}) },
    responseTime: Math.round(ms),
    ...(res.writableFinished ? {} : { aborted: true }),
    // `GET /v1/customers?access_token=[REDACTED] 400 VALIDATION_FAILED email, mobile`: why a request failed, at a glance.
    msg: `${req.method} ${url} ${res.statusCode}${error ? ` ${error.code}${error.fields ? ` ${error.fields.join(', ')}` : ''}` : ''}`,
  });
  (logger as unknown as Record<symbol, DestinationStream>)[symbols.streamSym].write(`{"level":${INFO}${isoTime()},"pid":${process.pid},${fields.slice(1)}\n`);
}

/** pino's number for info. */
const INFO = pino.levels.values.info;

/** What the exception filter leaves in `res.locals.error` for the request's log line: never values, only names. */
export interface LoggedError {
  code: string;
  fields?: string[];
}

/** Nest's start-up chatter (a line per module and per route) is for debugging the wiring, not for operators. */
const NEST_WIRING = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

const NEST_TO_PINO = { log: 'info', error: 'error', warn: 'warn', debug: 'debug', verbose: 'debug', fatal: 'fatal' } as const;

/** Nest's own messages (start-up, lifecycle, `new Logger(context)` in services) as JSON lines. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.write('log', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('verbose', message, rest);
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, rest);
  }

  /** Nest passes (message, context) or, for errors, (message, stack, context). */
  private write(nestLevel: keyof typeof NEST_TO_PINO, message: unknown, rest: unknown[]): void {
    const strings = rest.filter((r): r is string => typeof r === 'string');
    const context = strings.length > 0 ? strings[strings.length - 1] : undefined;
    const level = nestLevel === 'log' && context && NEST_WIRING.has(context) ? 'debug' : nestLevel;
    const stack = level === 'error' || level === 'fatal' ? strings.slice(0, -1)[0] : undefined;
    const fields = { context, ...(stack ? { stack } : {}) };
    if (message instanceof Error) {
      this.logger[NEST_TO_PINO[level]]({ ...fields, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.logger[NEST_TO_PINO[level]]({ ...fields, ...message });
    } else {
      this.logger[NEST_TO_PINO[level]](fields, String(message));
    }
  }
}
