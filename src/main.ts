import './runtime';
// Second: a process restarted with its heap flags must load nothing before (memory-sizing.ts).
import { memoryReport, workerLaunch } from './memory-sizing';
import './tracing/register';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import cluster from 'node:cluster';
import type { Server, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { createApp } from './app';
import { AppConfig, ConfigError, loadConfig, resolveAccessTokens } from './config/config';
import { draining } from './http/draining';
import { NewerEventsError } from './event-store/written-versions';
import { tracing } from './tracing/register';
import { relaySiblingNews } from './instance';
import { createLogger, NestPinoLogger } from './logging/logging';
import { prepareSqliteFiles } from './stores/stores.module';
import { StoreUnavailableError } from './storage/store-unavailable.error';

const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Stops accepting connections and resolves when every in-flight request has been answered, or after
 * the grace period. Answers sent from then on say `Connection: close` and end their connection, so
 * no keep-alive client sends a request on a connection about to be closed under it.
 */
function drainOnShutdown(server: Server): (graceMs: number) => Promise<void> {
  const open = new Set<ServerResponse>();
  let closing = false;
  // Ahead of Express's listener, so the header is set before anything can answer.
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (closing) return void res.setHeader('Connection', 'close');
    open.add(res);
    res.once('close', () => open.delete(res));
  });
  return (graceMs) =>
    new Promise((resolve) => {
      closing = true;
      // Long-polls answer and event streams end now: their consumers come back to another instance.
      draining.abort();
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close');
      setTimeout(resolve, graceMs).unref();
      server.close(() => resolve());
      server.closeIdleConnections();
    });
}

/** A start-up failure told in one line, without a stack. */
class StartError extends Error {}

const portInUse = (port: number) => new StartError(`port ${port} is in use; set PORT (0 picks a free one)`);

/**
 * Fails at once, before anything is opened or made, when the port is taken: a plain message rather
 * than a stack after the stores have been opened. listen() still reports a port taken just after.
 */
function ensurePortFree(port: number, host?: string): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? portInUse(port) : new StartError(`cannot listen on port ${port}: ${error.message}`)),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

type Settings = Omit<AppConfig, 'accessTokens'>;

/** What a worker tells the primary once it listens. */
interface Listening {
  listening: string;
}

/**
 * Without ACCESS_TOKENS, where the token is kept, and on the first start that it was just made. The
 * token itself is never printed: stdout is the log, and logs travel further than the data directory.
 */
function announceToken(logger: Logger, created: string | undefined, dataDir: string, url: string): void {
  if (created) {
    logger.log(
      `No ACCESS_TOKENS configured: made an access token for account "default" and kept it in ${dataDir}/access-token ` +
        `(readable by this user only; the part before ":default" is the token). Try it: curl -H "Authorization: Bearer $(cut -d: -f1 ${dataDir}/access-token)" ${url}/v1/profiles`,
    );
  } else if (!process.env.ACCESS_TOKENS) {
    logger.log(`Using the access token kept in ${dataDir}/access-token`);
  }
}

async function main(): Promise<void> {
  const settings = loadConfig();
  if (cluster.isPrimary && settings.workers > 1) return runPrimary(settings);
  // A worker's primary has checked the port and made the first-start token already.
  if (cluster.isPrimary) await ensurePortFree(settings.port, settings.host);
  const { tokens, created } = resolveAccessTokens(process.env, settings.dataDir);
  const app = await createApp({ ...settings, accessTokens: tokens });
  const logger = new Logger('Main');
  const stopAccepting = drainOnShutdown(app.getHttpServer());
  // Close in order (stop accepting and let in-flight requests finish, stop the projectors, close
  // the stores), then exit 0: a SIGTERM is the normal way to stop the service.
  let stopping = false;
  const shutDown = (reason: string) => {
    if (stopping) return; // a worker hears Ctrl-C from the terminal and SIGTERM from its primary
    stopping = true;
    logger.log(`Shutting down on ${reason}: finishing the requests in flight (at most ${SHUTDOWN_GRACE_MS} ms)`);
    stopAccepting(SHUTDOWN_GRACE_MS)
      .then(() => app.close())
      // The last spans, the shutdown's own among them, are exported before the process exits.
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.log('Stopped');
          process.exit(0);
        },
        (error) => {
          logger.error('Shutdown failed', (error as Error | undefined)?.stack ?? String(error));
          process.exit(1);
        },
      );
  };
  // `on`, not `once`: under `npm start` a Ctrl-C reaches the service from the terminal and again from
  // npm, which passes signals on; a second one must not end the process by default mid-shutdown.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => shutDown(signal));
  // A worker whose primary died (kill -9) must not serve on alone.
  if (cluster.isWorker) process.once('disconnect', () => shutDown('the loss of its primary'));
  await (settings.host ? app.listen(settings.port, settings.host) : app.listen(settings.port)).catch((error) => {
    throw (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE' ? portInUse(settings.port) : error;
  });
  const url = (await app.getUrl()).replace('[::1]', 'localhost').replace('[::]', 'localhost');
  // LOG_LEVEL=warn hides info lines; where the service listens is still worth one line there.
  // Without HOST the server is bound to every interface, not only to the localhost the URL names.
  const bound = settings.host ? '' : ', bound to every interface (HOST=127.0.0.1 keeps it to this machine)';
  logger[settings.logLevel === 'warn' ? 'warn' : 'log'](`Listening on ${url}${bound} (data in ${settings.dataDir})`);
  logger.log(memoryReport(settings, 'server'));
  if (tracing) logger.log(`Exporting traces to ${tracing.endpoint} (OpenTelemetry, OTLP)`);
  if (cluster.isWorker) process.send!({ listening: url } satisfies Listening);
  // With WORKERS, the primary says which token is used, once.
  if (cluster.isPrimary) announceToken(logger, created, settings.dataDir, url);
}

/**
 * WORKERS=N: N worker processes (node:cluster) serve the one port, each a whole service on the
 * same stores. The primary serves nothing: it checks the port, makes the first-start token once,
 * replaces a worker that dies, and on SIGTERM or SIGINT stops every worker gracefully, then itself.
 * A worker that fails before it listens (a store unreachable, say) stops the whole service.
 */
async function runPrimary(settings: Settings): Promise<void> {
  // The primary makes no app, which is what sets the workers' logger: its lines are JSON at LOG_LEVEL too.
  Logger.overrideLogger(new NestPinoLogger(createLogger(settings.logLevel)));
  await ensurePortFree(settings.port, settings.host);
  const { created } = resolveAccessTokens(process.env, settings.dataDir);
  prepareSqliteFiles(settings);
  const logger = new Logger('Primary');
  const listening = new Set<number>();
  const alive = new Set<number>();
  // Each worker is sized for its share of the memory limit (memory-sizing.ts); the primary, for its own.
  const launch = workerLaunch(settings.memory.server);
  cluster.setupPrimary({ execArgv: launch.execArgv });
  logger.log(memoryReport(settings, 'primary'));
  const fork = () => alive.add(cluster.fork(launch.env).id);
  let stopping = false;
  let failed = false;
  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    failed = code !== 0;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    // Each worker drains within SHUTDOWN_GRACE_MS; one stuck past that is killed.
    setTimeout(() => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    }, SHUTDOWN_GRACE_MS + 5_000).unref();
  };
  relaySiblingNews();
  cluster.on('message', (worker, message: Partial<Listening>) => {
    if (typeof message?.listening !== 'string') return;
    const first = listening.size === 0;
    listening.add(worker.id);
    if (first) announceToken(logger, created, settings.dataDir, message.listening);
    if (listening.size === settings.workers) logger.log(`${settings.workers} workers serve ${message.listening}`);
  });
  cluster.on('exit', (worker, code, signal) => {
    alive.delete(worker.id);
    const started = listening.delete(worker.id);
    if (!stopping) {
      if (!started) {
        logger.error(`Worker ${worker.process.pid} stopped before it listened (exit code ${code}): stopping the service`);
        return stopAll(1);
      }
      logger.warn(`Worker ${worker.process.pid} died (${signal ?? `exit code ${code}`}): starting another`);
      fork();
    }
    if (stopping && alive.size === 0) {
      logger.log('Stopped');
      process.exit(failed ? 1 : 0);
    }
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // `on`, as in a single process: a repeated signal is heard once.
    process.on(signal, () => {
      if (stopping) return;
      logger.log(`Shutting down on ${signal}: stopping ${alive.size} workers`);
      stopAll(0);
    });
  }
  for (let n = 0; n < settings.workers; n++) fork();
}

main().catch((error) => {
  const message =
    error instanceof ConfigError
      ? `Configuration error: ${error.message}`
      : error instanceof StartError || error instanceof StoreUnavailableError || error instanceof NewerEventsError
        ? `Cannot start: ${error.message}`
        : ((error as Error | undefined)?.stack ?? String(error));
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
