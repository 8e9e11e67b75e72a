import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { type AppConfig, loadConfig } from '../config/config';
import { ErasureLog } from '../key-store/erasure-log';
import { RECORD_KINDS } from '../read-models';
import { headOfCopy, recordsWithoutKeys, snapshotSqlite } from '../stores/sqlite-copies';
import { keysFile, openEventStore } from '../stores/stores.module';
import { applyErasureLog } from './erasures';

// `backup <dir>` and `restore <dir>`: a consistent copy of what the service keeps in files, with a
// manifest, and its restore into an empty data directory that erases again, from the erasure log,
// every record erased after the copy was taken (docs/operators.md, Backup and restore).

export const BACKUP_HELP = `Usage: npm run cli -- backup <dir>

Copies, while the service runs and writes, what it keeps in DATA_DIR into <dir>, which must be
empty or not exist: the SQLite file of events and read models (service.sqlite) as it was at one
instant, then the key store (keys.sqlite), copied after it so that every key its events need is
in it, and the generated access token. A manifest (manifest.json) says the event store's position
at the copy, when each file was copied, their SHA-256 checksums and the version that wrote it.
A backup without a manifest did not finish: take another.

With EVENTSTORE_CONNECTION_STRING or MONGODB_URI, those servers' data is backed up with their own
tools first (docs/operators.md gives the order), and this command copies what stays in SQLite.

The backup holds the keys with the events: whoever reads it reads the data. Keep it as you keep
DATA_DIR. Erasures made after it are not in it: the erasure log (ERASURE_LOG) keeps them, and
restore applies them again.

Options:
  --help    This help
`;

export const RESTORE_HELP = `Usage: npm run cli -- restore <dir>

Restores a backup made by backup into DATA_DIR, which must be empty or not exist (with the service
stopped). It first checks the backup: its manifest, each file's checksum, and that its key store was
copied after its events (else it refuses, saying what to do). Then it erases again every record the
erasure log (ERASURE_LOG) names that the backup still holds: its key is destroyed and its read model
documents scrubbed, so none of its values can be read once the command ends; the service's next
start appends the erasure events the restored events lack, before it answers.

Options:
  --help    This help
`;

const MANIFEST = 'manifest.json';
const FORMAT = 'profiles-customers-service backup 1';
const EVENTS_FILE = 'service.sqlite';
const KEYS_FILE = 'keys.sqlite';
const TOKEN_FILE = 'access-token';

type Settings = Omit<AppConfig, 'accessTokens'>;

interface CopiedFile {
  name: string;
  holds: string;
  /** When its copy began: the instant it shows (a SQLite file's snapshot). */
  copiedAt: string;
  bytes: number;
  sha256: string;
}

interface Manifest {
  format: string;
  /** The service version that wrote it. */
  version: string;
  startedAt: string;
  finishedAt: string;
  /** Where the configuration kept each store: a restore needs the same. */
  stores: { events: 'sqlite' | 'eventstoredb'; readModels: 'sqlite' | 'mongodb'; keys: 'sqlite' | 'mongodb' };
  /** The event store's head: of the copied events (SQLite), else EventStoreDB's when the key store's copy began. */
  eventStorePosition: string | null;
  files: CopiedFile[];
}

/** A refusal the operator can act on: told in one line, exit 1. */
class BackupRefusal extends Error {}

/** Runs backup or restore to its exit code: 0 done, 1 refused (said on stderr) or failed. */
export async function backupCommand(command: 'backup' | 'restore', dir: string): Promise<number> {
  const config = loadConfig();
  const notice = (line: string) => process.stderr.write(`${line}\n`);
  try {
    process.stdout.write(await (command === 'backup' ? runBackup : runRestore)(dir, config, notice));
    return 0;
  } catch (error) {
    if (!(error instanceof BackupRefusal)) throw error;
    notice(`${command === 'backup' ? 'Backup' : 'Restore'} refused: ${error.message}`);
    return 1;
  }
}

const storesOf = (config: Settings): Manifest['stores'] => ({
  events: config.eventStoreConnectionString ? 'eventstoredb' : 'sqlite',
  readModels: config.mongodb ? 'mongodb' : 'sqlite',
  keys: config.mongodb ? 'mongodb' : 'sqlite',
});

/** The service's version, from its package.json (two levels up from src/cli and from dist/cli). */
function serviceVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The names in a directory, or none when it does not exist; a file there is refused. */
function entriesOf(dir: string, what: string): string[] {
  if (!existsSync(dir)) return [];
  if (!statSync(dir).isDirectory()) throw new BackupRefusal(`${what} ${dir} is not a directory.`);
  return readdirSync(dir);
}

async function runBackup(target: string, config: Settings, notice: (line: string) => void): Promise<string> {
  const dir = resolve(target);
  if (entriesOf(dir, 'The target').length > 0) throw new BackupRefusal(`The target ${dir} is not empty: back up into an empty or new directory.`);
  const stores = storesOf(config);
  if (stores.events === 'sqlite' && !existsSync(config.sqliteFile)) {
    throw new BackupRefusal(`No store at ${config.sqliteFile}: set DATA_DIR to the service's data directory.`);
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const startedAt = new Date();
  const files: CopiedFile[] = [];
  const copied = async (name: string, holds: string, copiedAt: Date) => {
    const file = join(dir, name);
    chmodSync(file, 0o600); // SQLite makes its copy with the umask's mode
    syncPath(file);
    files.push({ name, holds, copiedAt: copiedAt.toISOString(), bytes: statSync(file).size, sha256: await sha256Of(file) });
  };
  let eventStorePosition: string;
  // The events first, the keys after: keys are only ever added or destroyed, and each is on disk
  // before the first event sealed with it, so a key store copied later holds every key the copied
  // events need (a key destroyed in between is an erasure: the restore finishes it).
  if (stores.events === 'sqlite') {
    notice(`Copying the events${stores.readModels === 'sqlite' ? ' and read models' : ''} (${config.sqliteFile})…`);
    const at = snapshotSqlite(config.sqliteFile, join(dir, EVENTS_FILE));
    eventStorePosition = headOfCopy(join(dir, EVENTS_FILE));
    await copied(EVENTS_FILE, stores.readModels === 'sqlite' ? 'events and read models' : 'events', at);
  } else {
    const events = await openEventStore(config, RECORD_KINDS, { log: notice });
    try {
      eventStorePosition = String((await events.headPosition()).commit);
    } finally {
      await events.close();
    }
  }
  if (stores.keys === 'sqlite') {
    notice(`Copying the key store (${keysFile(config)})…`);
    const at = snapshotSqlite(keysFile(config), join(dir, KEYS_FILE));
    await copied(KEYS_FILE, 'data keys', at);
  }
  const token = join(config.dataDir, TOKEN_FILE);
  if (existsSync(token)) {
    const at = new Date();
    copyFileSync(token, join(dir, TOKEN_FILE));
    await copied(TOKEN_FILE, 'the generated access token', at);
  }
  const manifest: Manifest = {
    format: FORMAT,
    version: serviceVersion(),
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    stores,
    eventStorePosition,
    files,
  };
  // Last, and whole or not at all: a backup with a manifest is complete.
  writeFileSync(join(dir, `${MANIFEST}.part`), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  syncPath(join(dir, `${MANIFEST}.part`));
  renameSync(join(dir, `${MANIFEST}.part`), join(dir, MANIFEST));
  syncPath(dir);
  const what =
    files.map((f) => `${f.name} (${f.holds}, ${f.bytes.toLocaleString('en-US')} bytes)`).join(', ') || 'nothing of its own (every store is on a server)';
  return `Backed up to ${dir}: ${what}; event store position ${eventStorePosition ?? 'unknown'}.\n`;
}

/** The manifest, and every file it lists checked against its checksum. */
async function checkedBackup(dir: string, config: Settings): Promise<Manifest> {
  if (!existsSync(join(dir, MANIFEST))) {
    throw new BackupRefusal(`No ${MANIFEST} in ${dir}: not a backup, or one that did not finish. Restore a complete backup (made by the backup command).`);
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch (error) {
    throw new BackupRefusal(`${join(dir, MANIFEST)} cannot be read (${(error as Error).message}): restore another backup.`);
  }
  if (manifest.format !== FORMAT || !Array.isArray(manifest.files)) {
    throw new BackupRefusal(
      `${join(dir, MANIFEST)} is not a manifest this version reads ("${manifest.format}"): restore it with the version that wrote it (${manifest.version}).`,
    );
  }
  const here = storesOf(config);
  const differ = (Object.keys(here) as (keyof Manifest['stores'])[]).filter((store) => manifest.stores?.[store] !== here[store]);
  if (differ.length > 0) {
    throw new BackupRefusal(
      `The backup was taken with ${differ.map((s) => `${s} in ${manifest.stores?.[s]}`).join(', ')}; this configuration keeps ${differ.map((s) => `${s} in ${here[s]}`).join(', ')}: restore with the settings it was taken with.`,
    );
  }
  for (const file of manifest.files) {
    const path = join(dir, file.name);
    if (!existsSync(path)) throw new BackupRefusal(`${path} is missing: the backup is incomplete. Restore another backup.`);
    if (statSync(path).size !== file.bytes || (await sha256Of(path)) !== file.sha256) {
      throw new BackupRefusal(`${path} does not match its checksum in the manifest: the backup is damaged or was altered. Restore another backup.`);
    }
  }
  const events = manifest.files.find((f) => f.name === EVENTS_FILE);
  const keys = manifest.files.find((f) => f.name === KEYS_FILE);
  if (events && keys) {
    const missing = recordsWithoutKeys(
      join(dir, EVENTS_FILE),
      join(dir, KEYS_FILE),
      RECORD_KINDS.map((k) => `${k.streamPrefix}-`),
    );
    if (keys.copiedAt < events.copiedAt || missing.count > 0) {
      throw new BackupRefusal(
        `The key store in ${dir} is older than its events` +
          (missing.count > 0 ? ` (${missing.count} records have events but no key: ${missing.some.join(', ')}${missing.count > 3 ? ', …' : ''})` : '') +
          ': restored, their values could not be read. Take a new backup with the backup command (it copies the key store after the events), or put a copy of keys.sqlite taken after these events in its place.',
      );
    }
  }
  return manifest;
}

async function runRestore(source: string, config: Settings, notice: (line: string) => void): Promise<string> {
  const dir = resolve(source);
  const manifest = await checkedBackup(dir, config);
  const log = new ErasureLog(config.erasureLog);
  // Nothing but the erasure log, should it have been set inside it.
  const present = entriesOf(config.dataDir, 'DATA_DIR').filter((name) => join(config.dataDir, name) !== log.file);
  if (present.length > 0) {
    throw new BackupRefusal(
      `DATA_DIR ${config.dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''}): restore only into an empty data directory. Stop the service and move the directory aside first.`,
    );
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  for (const file of manifest.files) {
    const part = join(config.dataDir, `${file.name}.restoring`);
    copyFileSync(join(dir, file.name), part);
    chmodSync(part, 0o600);
    syncPath(part);
    renameSync(part, join(config.dataDir, file.name));
  }
  syncPath(config.dataDir);
  notice(
    `Copied ${manifest.files.map((f) => f.name).join(', ') || 'nothing'} into ${config.dataDir} (backup taken ${manifest.startedAt} by version ${manifest.version})`,
  );
  if (!existsSync(log.file)) {
    notice(
      `No erasure log at ${log.file} (ERASURE_LOG): no erasure applied again. If records were erased after this backup was taken, set ERASURE_LOG to the log the service wrote, move DATA_DIR aside, and restore again.`,
    );
  }
  const again = await applyErasureLog(config, log);
  return (
    `Restored ${dir} into ${config.dataDir}: event store position ${manifest.eventStorePosition ?? 'unknown'}.\n` +
    `Erased again ${again} records of the erasure log ${log.file} that the backup still held` +
    (again > 0
      ? ': their keys are destroyed and their read models scrubbed; the service appends their erasure events as it starts, before it answers.\n'
      : '.\n')
  );
}
