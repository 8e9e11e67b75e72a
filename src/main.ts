import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { Server } from 'node:http';
import { createApp } from './app';
import { ConfigError, loadConfig, resolveAccessTokens } from './config/config';
import { StoreUnavailableError } from './storage/store-unavailable.error';

const SHUTDOWN_GRACE_MS = 10_000;

/** Resolves when every in-flight request has been answered, or after the grace period. */
function stopAccepting(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, graceMs).unref();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

async function main(): Promise<void> {
  const settings = loadConfig();
  const { tokens, created } = resolveAccessTokens(process.env, settings.dataDir);
  const app = await createApp({ ...settings, accessTokens: tokens });
  // Close in order (stop accepting and let in-flight requests finish, stop the projectors, close
  // the stores), then exit 0: a SIGTERM is the normal way to stop the service.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopAccepting(app.getHttpServer(), SHUTDOWN_GRACE_MS).then(() => app.close()).then(
        () => process.exit(0),
        (error) => {
          process.stderr.write(`Shutdown failed: ${error?.stack ?? error}\n`);
          process.exit(1);
        },
      );
    });
  }
  await (settings.host ? app.listen(settings.port, settings.host) : app.listen(settings.port));
  const url = (await app.getUrl()).replace('[::1]', 'localhost').replace('[::]', 'localhost');
  const logger = new Logger('Main');
  logger.log(`Listening on ${url} (data in ${settings.dataDir})`);
  if (created) {
    // Shown once, on the first start: it is kept in the data directory, never logged again.
    process.stdout.write(
      `\nNo ACCESS_TOKENS configured: made an access token for account "default" and kept it in ${settings.dataDir}/access-token.\n` +
        `Try it:\n  curl '${url}/v1/profiles?access_token=${created}'\n\n`,
    );
  } else if (!process.env.ACCESS_TOKENS) {
    logger.log(`Using the access token kept in ${settings.dataDir}/access-token`);
  }
}

main().catch((error) => {
  const message =
    error instanceof ConfigError
      ? `Configuration error: ${error.message}`
      : error instanceof StoreUnavailableError
        ? `Cannot start: ${error.message}`
        : error?.stack ?? String(error);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
