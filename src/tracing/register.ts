import { ConfigError } from '../config/config';
import { startTracing, type Tracing } from './tracing';

/**
 * Imported first by the entry points (main.ts, cli.ts): the SDK has to patch `http` and `express`
 * before anything loads them. Undefined when tracing is not configured.
 */
export const tracing: Tracing | undefined = start();

function start(): Tracing | undefined {
  try {
    return startTracing();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // As main.ts says any bad setting, before anything else runs.
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}
