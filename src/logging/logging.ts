import type { LoggerService } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingHttpHeaders } from 'node:http';
import { unescape } from 'node:querystring';
import pino, { DestinationStream, Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { LogLevel } from '../config/config';
import type { ServiceRequest } from '../http/request-context';

export type { Logger };

const REDACTED = '[REDACTED]';

/**
 * `url` with the value of every query parameter named like `access_token` replaced. Names are
 * decoded as the query parser decodes them, so `acc%65ss_token` is caught too.
 */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question < 0) return url;
  const params = url
    .slice(question + 1)
    .split('&')
    .map((param) => {
      const name = param.split('=', 1)[0];
      return unescape(name.replace(/\+/g, ' ')).toLowerCase().includes('access_token') ? `${name}=${REDACTED}` : param;
    });
  return `${url.slice(0, question + 1)}${params.join('&')}`;
}

/** The request headers worth a log line, the credentials replaced. */
function redactHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const safe = { ...headers };
  if (safe.authorization !== undefined) safe.authorization = REDACTED;
  if (safe.cookie !== undefined) safe.cookie = REDACTED;
  return safe;
}

/** The service's one JSON logger: a line per object on stdout (or `destination`, for tests). */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
}

/**
 * One info line per request when its response is sent (so nothing per request at LOG_LEVEL=warn),
 * with the request id clients and events see. Serializers are written here rather than pino's
 * standard ones, which log the raw URL and headers, token included.
 */
export function requestLogger(logger: Logger) {
  return pinoHttp<ServiceRequest, Response>({
    logger,
    genReqId: (req) => req.requestId ?? '',
    customAttributeKeys: { reqId: 'requestId' },
    customLogLevel: () => 'info',
    customSuccessMessage: (req, res) => requestLine(req, res),
    customErrorMessage: (req, res) => requestLine(req, res),
    quietReqLogger: true,
    wrapSerializers: false,
    serializers: {
      req: (req: Request) => ({
        method: req.method,
        url: redactUrl(req.originalUrl),
        headers: redactHeaders(req.headers),
        remoteAddress: req.socket?.remoteAddress,
      }),
      res: (res: Response) => ({ statusCode: res.statusCode, ...(res.locals?.error ? { error: res.locals.error } : {}) }),
      err: pino.stdSerializers.err,
    },
  });
}

/** `GET /v1/customers?access_token=[REDACTED] 400 VALIDATION_FAILED email, mobile`: why a request failed, at a glance. */
function requestLine(req: Request, res: Response): string {
  const error: LoggedError | undefined = res.locals?.error;
  const why = error ? ` ${error.code}${error.fields ? ` ${error.fields.join(', ')}` : ''}` : '';
  return `${req.method} ${redactUrl(req.originalUrl)} ${res.statusCode}${why}`;
}

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
