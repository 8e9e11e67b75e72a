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
  console.log(`Skipping "${name}" with TEST_STORES=live: it is about the embedded SQLite store.`);
  describe.skip(name, body);
}
