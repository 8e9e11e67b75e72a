import { randomUUID } from 'node:crypto';

/**
 * `TEST_STORES=live` (what `npm run test:integration` sets): the end-to-end suites run the service
 * on EventStoreDB and MongoDB, at EVENTSTORE_CONNECTION_STRING and MONGODB_URI, instead of a SQLite
 * file per app. Unset, everything runs on SQLite.
 */
export const LIVE_STORES = process.env.TEST_STORES === 'live';

/**
 * The servers keep what every run wrote, so in live mode each test file gets accounts of its own
 * (and uid() values of its own): lists and slugs never meet another run's records.
 */
export const RUN_ID = LIVE_STORES ? randomUUID().slice(0, 8) : '';
export const RUN_SUFFIX = RUN_ID && `-${RUN_ID}`;

/**
 * `TEST_WORKERS=N` (the "WORKERS=2" project of jest.config.js sets 2): startTestApp runs the built service
 * (dist/main.js) as real processes with WORKERS=N on the data directory instead of in this
 * process, and the HTTP suites talk to it over its socket; startChildService starts WORKERS=N too
 * unless told WORKERS. Unset, startTestApp runs the app in-process and a child service is one process.
 */
export const TEST_WORKERS = Number(process.env.TEST_WORKERS || 0);

/** The settings that put the service on the live stores; {} on SQLite. */
export function liveStoreEnv(): NodeJS.ProcessEnv {
  if (!LIVE_STORES) return {};
  const { EVENTSTORE_CONNECTION_STRING, MONGODB_URI } = process.env;
  if (!EVENTSTORE_CONNECTION_STRING || !MONGODB_URI) {
    throw new Error('TEST_STORES=live needs EVENTSTORE_CONNECTION_STRING and MONGODB_URI');
  }
  // One database for every run: a new one would make each app fold the whole event history first.
  return { EVENTSTORE_CONNECTION_STRING, MONGODB_URI, MONGODB_DATABASE: process.env.MONGODB_DATABASE || 'profiles_customers_e2e' };
}

/**
 * `describe` for a suite about SQLite itself (its file, its sequence-number positions, a crash of
 * its process): skipped, saying why, when the stores are live.
 */
export function describeOnSqlite(name: string, body: () => void): void {
  if (!LIVE_STORES) return describe(name, body);
  describe.skip(`${name} (skipped with TEST_STORES=live: it is about the embedded SQLite store)`, body);
}

/**
 * `describe` for a suite that cannot run against TEST_WORKERS' processes (it needs the app in this
 * process, or starts processes of its own that the mode would change): skipped then, saying why.
 */
export function describeUnlessWorkers(name: string, why: string, body: () => void): void {
  if (!TEST_WORKERS) return describe(name, body);
  // The title says why; test/support/skipped-reporter.js lists it at the end of the run.
  describe.skip(`${name} (skipped with TEST_WORKERS: ${why})`, body);
}
