import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { createApp } from './app';
import { ConfigError, loadConfig, resolveAccessTokens } from './config/config';

async function main(): Promise<void> {
  const settings = loadConfig();
  const { tokens, created } = resolveAccessTokens(process.env, settings.dataDir);
  const app = await createApp({ ...settings, accessTokens: tokens });
  // Close in order (stop accepting, stop the projectors, close the stores), then exit 0: a
  // SIGTERM is the normal way to stop the service.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.close().then(
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
  const message = error instanceof ConfigError ? `Configuration error: ${error.message}` : error?.stack ?? String(error);
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
