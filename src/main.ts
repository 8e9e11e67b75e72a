import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { Server, ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import { createApp } from './app';
import { ConfigError, loadConfig, resolveAccessTokens } from './config/config';
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

async function main(): Promise<void> {
  const settings = loadConfig();
  await ensurePortFree(settings.port, settings.host);
  const { tokens, created } = resolveAccessTokens(process.env, settings.dataDir);
  const app = await createApp({ ...settings, accessTokens: tokens });
  const logger = new Logger('Main');
  const stopAccepting = drainOnShutdown(app.getHttpServer());
  // Close in order (stop accepting and let in-flight requests finish, stop the projectors, close
  // the stores), then exit 0: a SIGTERM is the normal way to stop the service.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.log(`Shutting down on ${signal}: finishing the requests in flight (at most ${SHUTDOWN_GRACE_MS} ms)`);
      stopAccepting(SHUTDOWN_GRACE_MS).then(() => app.close()).then(
        () => {
          logger.log('Stopped');
          process.exit(0);
        },
        (error) => {
          logger.error('Shutdown failed', error?.stack ?? String(error));
          process.exit(1);
        },
      );
    });
  }
  await (settings.host ? app.listen(settings.port, settings.host) : app.listen(settings.port)).catch((error) => {
    throw error?.code === 'EADDRINUSE' ? portInUse(settings.port) : error;
  });
  const url = (await app.getUrl()).replace('[::1]', 'localhost').replace('[::]', 'localhost');
  // LOG_LEVEL=warn hides info lines; where the service listens is still worth one line there.
  logger[settings.logLevel === 'warn' ? 'warn' : 'log'](`Listening on ${url} (data in ${settings.dataDir})`);
  if (created) {
    // The token itself is never printed: stdout is the log, and logs travel further than the data directory.
    logger.log(
      `No ACCESS_TOKENS configured: made an access token for account "default" and kept it in ${settings.dataDir}/access-token ` +
        `(readable by this user only; the part before ":default" is the token). Try it: curl -H "Authorization: Bearer $(cut -d: -f1 ${settings.dataDir}/access-token)" ${url}/v1/profiles`,
    );
  } else if (!process.env.ACCESS_TOKENS) {
    logger.log(`Using the access token kept in ${settings.dataDir}/access-token`);
  }
}

main().catch((error) => {
  const message =
    error instanceof ConfigError
      ? `Configuration error: ${error.message}`
      : error instanceof StartError || error instanceof StoreUnavailableError
        ? `Cannot start: ${error.message}`
        : error?.stack ?? String(error);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
