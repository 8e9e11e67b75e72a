import {
  MongoBulkWriteError,
  MongoClient,
  MongoClientClosedError,
  MongoClientOptions,
  MongoDriverError,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  WriteError,
} from 'mongodb';
import { ConfigError } from '../config/config';
import { StoreUnavailableError } from './store-unavailable.error';

/** The MongoDB client as every store on MongoDB opens it, and the driver's errors as the ports name them. */

const DUPLICATE_KEY = 11000;

/**
 * Indexes of the bulk write's operations that failed on a duplicate _id: a guarded upsert whose
 * guard did not match an existing document tried to insert it. Null when anything else failed,
 * the write concern too: the driver throws for write errors first and leaves a write concern
 * error beside them in the result only (mongodb 7.9 lib/bulk/common.js, handleWriteError), and
 * writes not confirmed by a majority must not be taken as stored.
 */
export function duplicateKeyFailures(error: unknown): number[] | null {
  if (!(error instanceof MongoBulkWriteError) || unconfirmed(error)) return null;
  const writeErrors = writeErrorsOf(error);
  if (writeErrors.length === 0 || writeErrors.some((w) => w.code !== DUPLICATE_KEY)) return null;
  return writeErrors.map((w) => w.index);
}

/** The bulk write's write errors as a list (the driver gives one bare; Array.isArray does not narrow its readonly list). */
const writeErrorsOf = ({ writeErrors }: MongoBulkWriteError): readonly WriteError[] =>
  Array.isArray(writeErrors) ? (writeErrors as readonly WriteError[]) : [writeErrors as WriteError];

/** Writes a majority did not confirm (in time): the cluster cannot say they are stored, now. */
const unconfirmed = (error: MongoBulkWriteError) => error.result?.getWriteConcernError?.() !== undefined;

export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/**
 * How the service's client talks to MongoDB. `timeoutMs` bounds each wait of an operation:
 * finding a server, opening a connection, getting one from the pool, and each send or receive on
 * it (driver 7 ignores `timeoutMS`; a socket timeout closes the connection and fails the
 * operation as a network error). An acknowledged write is on disk (journal) and, on a replica
 * set, on a majority of its members, so a commit the projector moved past cannot vanish in a
 * crash of the server. The wait for that majority is bounded by half of `timeoutMs`, so a lagging
 * replica set answers a write concern error (WriteConcernTimeout, unavailable) well before the
 * socket times out, on a connection still usable, rather than a network error that closes it.
 *
 * Reads go to the primary with majority read concern, whatever the URI says: a write's 2xx, a
 * checkpoint a request waits for and a record's data key must be seen by the next read on any
 * instance, which a secondary or a local read of a deposed primary may not show. Options given
 * here take precedence over the URI's (mongodb 7.9 src/connection_string.ts, parseOptions: the
 * object's value comes first).
 */
export function mongoClientOptions(timeoutMs: number): MongoClientOptions {
  const wtimeoutMS = Math.max(1, Math.floor(timeoutMs / 2));
  return {
    appName: 'profiles-customers-service',
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    writeConcern: { w: 'majority', journal: true },
    // Each also a key of its own: the URI's key would override the one inside writeConcern or readConcern.
    journal: true,
    wtimeoutMS,
    readConcernLevel: 'majority',
    readPreference: 'primary',
    // Retries of what the driver labels an overload: a server's refusal, whose backoff the server
    // may set to seconds, past any timeout here, and a connection that failed as it was opened
    // (after a failover). One, as for any retryable read; then a 503 with Retry-After.
    maxAdaptiveRetries: 1,
  };
}

/**
 * Server error codes that mean "not now": the server is shutting down, stepping down, not (yet)
 * primary, unreachable or out of time. The driver's retryable codes (lib/error.js,
 * RETRYABLE_READ_ERROR_CODES) plus MaxTimeMSExpired, WriteConcernTimeout and LegacyNotPrimary.
 */
const UNAVAILABLE_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  50, // MaxTimeMSExpired
  64, // WriteConcernTimeout
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10058, // LegacyNotPrimary
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/**
 * A connection pool that gave none: none free or opened within waitQueueTimeoutMS, or the pool
 * closed (the client closing, or its server removed from the topology). The driver's index does not
 * export these classes (lib/cmap/errors.js): known by their names.
 */
const POOL_GAVE_NONE = new Set(['MongoWaitQueueTimeoutError', 'MongoPoolClosedError']);

function isUnavailable(error: unknown): boolean {
  if (error instanceof MongoDriverError && POOL_GAVE_NONE.has(error.name)) return true;
  if (
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    // The server an operation picked closing or removed, or the client closing under it.
    error instanceof MongoServerClosedError ||
    error instanceof MongoClientClosedError
  ) {
    return true;
  }
  if (error instanceof MongoBulkWriteError) {
    // A driver's error thrown during the bulk write (a lost connection, a timeout, a refusal) comes
    // wrapped in one without its class, kept as errorResponse (mongodb 7.9 src/bulk/common.ts:610,
    // src/error.ts:244): judged by what it wraps, so a refusal stays a bug, not an outage. A
    // server's error wrapped so has its reply there instead, and its code copied: judged below.
    if (error.errorResponse instanceof Error) return isUnavailable(error.errorResponse);
    const writeErrors = writeErrorsOf(error);
    if (writeErrors.some((w) => UNAVAILABLE_CODES.has(w.code))) return true;
    if (unconfirmed(error)) return true;
  }
  if (!(error instanceof MongoError)) return false;
  // An overloaded server's refusal (mongodb 7.9 src/error.ts MongoErrorLabel; server codes 433,
  // 449, 450 and 462): whatever its code, not now.
  if (error.hasErrorLabel(MongoErrorLabel.SystemOverloadedError)) return true;
  return typeof error.code === 'number' && UNAVAILABLE_CODES.has(error.code);
}

/**
 * A client connected within `timeoutMs` (which also bounds every later operation), so a wrong or
 * unreachable server stops the start with a clear error: ConfigError for a URI that cannot be
 * parsed, StoreUnavailableError for a server not reached.
 */
export async function connectMongoClient(uri: string, timeoutMs: number): Promise<MongoClient> {
  let client: MongoClient;
  try {
    client = new MongoClient(uri, mongoClientOptions(timeoutMs));
  } catch (error) {
    throw new ConfigError(`MONGODB_URI cannot be parsed: ${(error as Error).message}`);
  }
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.close().catch(() => undefined);
    const translated = translateMongoError(error);
    throw translated instanceof StoreUnavailableError ? translated : new StoreUnavailableError('MongoDB', (error as Error).message);
  }
}

/** The port's error for a driver error: no server to talk to, or one that cannot answer now, becomes StoreUnavailableError. */
export function translateMongoError(error: unknown): unknown {
  return isUnavailable(error) ? new StoreUnavailableError('MongoDB', (error as Error).message) : error;
}
