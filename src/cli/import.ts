import { Logger } from '@nestjs/common';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { AppConfig, ConfigError, loadConfig, parseAccessTokens, TOKEN_FILE } from '../config/config';
import type { FieldFault } from '../errors';
import { Refusal } from '../errors';
import { EventStore, NewEventMetadata, RecordErasedError, WrongExpectedRevisionError } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { slugKey } from '../profiles/profile.decider';
import { SlugReservations } from '../profiles/slug-reservations';
import type { ReadStore } from '../read-store/read-store.port';
import { importedCreation, readRecord } from '../records/handle-command';
import { streamIdOf } from '../records/record';
import type { RecordWriter } from '../records/record-writer';
import { READ_MODELS } from '../read-models';
import { formatOf, readRows } from './import-file';
import { checkRow, CheckedRow, differences, IMPORT_KINDS, ImportKind } from './import-rows';
import { count, duration } from './output';
import { operator } from './parked';
import { IMPORT_HELP } from './import-help';

/** Rows appended at once: one transaction of the event store, one of the key store. */
const BATCH = 2000;
/** Batches under way at once: the next is checked while one is written. */
const IN_FLIGHT = 2;
const TTY_EVERY_MS = 200;
const LINE_EVERY_MS = 5000;

export class ImportUsageError extends Error {}

export interface ImportInvocation {
  kind: ImportKind;
  file: string;
  accountId: string;
  dryRun: boolean;
}

/** The command line after `import`, checked: a usage error names what is wrong. */
export function importInvocation(argv: string[]): ImportInvocation | { help: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { account: { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    const option = /'(-[^' ]+)/.exec((error as Error).message)?.[1] ?? 'an option';
    throw new ImportUsageError(
      (error as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? `${option} needs a value.` : `import has no option ${option}.`,
    );
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: IMPORT_HELP };
  const names = IMPORT_KINDS.map((k) => k.name).join(' or ');
  if (positionals.length !== 2) throw new ImportUsageError(`import needs what to import (${names}) and the file.`);
  const kind = IMPORT_KINDS.find((k) => k.name === positionals[0]);
  if (!kind) throw new ImportUsageError(`import takes ${names}, not "${positionals[0]}".`);
  const file = positionals[1];
  if (!existsSync(file) || !statSync(file).isFile()) throw new ImportUsageError(`No file at ${file}.`);
  const accountId = values.account?.trim();
  if (!accountId) throw new ImportUsageError('import needs --account <id>: the account the records belong to.');
  return { kind, file, accountId, dryRun: values['dry-run'] === true };
}

/**
 * The accounts the service's access tokens name (ACCESS_TOKENS, else the data directory's token
 * file), or undefined when neither is there yet: the records of an account no token names could
 * not be read. Read without making the token file, as the service's first start does.
 */
function knownAccounts(dataDir: string): Set<string> | undefined {
  const configured = process.env.ACCESS_TOKENS?.trim();
  const file = join(dataDir, TOKEN_FILE);
  const tokens = configured ? parseAccessTokens(configured) : existsSync(file) ? parseAccessTokens(readFileSync(file, 'utf8')) : undefined;
  return tokens && new Set(tokens.values());
}

/** What became of a row: in (created now, or found in with the same values: skipped), or refused. */
type Outcome = 'created' | 'skipped' | FieldFault[];

export interface ImportCounts {
  read: number;
  created: number;
  skipped: number;
  refused: number;
}

/** `import`: the rows of the file into the store, then the read models up to them; the exit code. */
export async function runImport(
  { kind, file, accountId, dryRun }: ImportInvocation,
  { eventStore, readStore }: { eventStore: EventStore; readStore: ReadStore },
  signal: AbortSignal,
): Promise<number> {
  const config = loadConfig();
  const accounts = knownAccounts(config.dataDir);
  if (accounts && !accounts.has(accountId)) {
    throw new ConfigError(`No access token names the account "${accountId}" (the accounts are: ${[...accounts].join(', ')}); its records could not be read.`);
  }
  // The projectors' log lines go to stderr: stdout is the refused rows and the report.
  Logger.overrideLogger({
    log: () => undefined,
    warn: (m: unknown) => void process.stderr.write(`${String(m)}\n`),
    error: (m: unknown) => void process.stderr.write(`${String(m)}\n`),
  });
  const importer = new Importer(kind, eventStore, accountId, basename(file), dryRun);
  const progress = new ImportProgress(statSync(file).size);
  const counts: ImportCounts = { read: 0, created: 0, skipped: 0, refused: 0 };
  const tell = (line: number, outcome: Outcome) => {
    if (outcome === 'created') counts.created++;
    else if (outcome === 'skipped') counts.skipped++;
    else {
      counts.refused++;
      for (const fault of outcome) process.stdout.write(`line ${line}: ${fault.field}: ${fault.message}\n`);
    }
  };
  process.stderr.write(
    `${dryRun ? 'Checking' : 'Importing'} ${kind.name} from ${file} into account ${accountId}${dryRun ? ' (dry run: nothing is written)' : ''}\n`,
  );
  const inFlight: Promise<{ rows: CheckedRow[]; outcomes: Outcome[] }>[] = [];
  const settle = async () => {
    const { rows, outcomes } = await inFlight.shift()!;
    rows.forEach((row, i) => tell(row.line, outcomes[i]));
  };
  let batch: CheckedRow[] = [];
  let bytes = 0;
  const format = await formatOf(file);
  for await (const row of readRows(file, format, (read) => (bytes = read))) {
    if (signal.aborted) break;
    counts.read++;
    const checked = checkRow(kind, row);
    if ('faults' in checked) tell(checked.line, checked.faults);
    else if (kind.name === 'profiles') tell(checked.line, await importer.profile(checked));
    else batch.push(checked);
    if (batch.length >= BATCH) {
      const rows = batch;
      batch = [];
      inFlight.push(importer.customers(rows).then((outcomes) => ({ rows, outcomes })));
      while (inFlight.length >= IN_FLIGHT) await settle();
    }
    progress.update(counts, bytes);
  }
  if (batch.length > 0) inFlight.push(importer.customers(batch).then((outcomes) => ({ rows: batch, outcomes })));
  while (inFlight.length > 0) await settle();
  progress.update(counts, bytes, true);
  if (!dryRun && !signal.aborted && counts.created > 0) await foldImported(eventStore, readStore, config, signal);
  process.stdout.write(
    `${dryRun ? 'Dry run: nothing written. ' : ''}Rows read: ${count(counts.read)}, ${dryRun ? 'to create' : 'created'}: ${count(counts.created)}, skipped: ${count(counts.skipped)}, refused: ${count(counts.refused)}\n`,
  );
  if (signal.aborted) {
    process.stderr.write('Interrupted: run the same command again to import the rest (rows already in are skipped).\n');
    return 130;
  }
  return counts.refused > 0 ? 1 : 0;
}

/** Writes (or, on a dry run, checks) the rows of one import. */
class Importer {
  private readonly importId = randomUUID();
  private readonly by = operator();
  /** Profiles: the slugs of the rows taken so far (by key), with their line and id: unique in the file too. */
  private readonly slugs = new Map<string, { line: number; id: string }>();
  private readonly reservations: SlugReservations<Pick<RecordWriter, 'load'>>;

  constructor(
    private readonly kind: ImportKind,
    private readonly eventStore: EventStore,
    private readonly accountId: string,
    private readonly file: string,
    private readonly dryRun: boolean,
  ) {
    this.reservations = new SlugReservations(eventStore, { load: (id) => readRecord(eventStore, kind.kind, id) });
  }

  /** The events' metadata: the import's id correlates them, stamped with who imported, when and from where. */
  private metadata(): NewEventMetadata {
    return {
      accountId: this.accountId,
      correlationId: this.importId,
      causationId: this.importId,
      imported: { by: this.by, at: new Date().toISOString(), file: this.file },
    };
  }

  /**
   * A batch of rows (customers): appended together, each at 'no_stream' (the event store commits
   * the appends of one turn in one transaction, and the key store makes their keys in one), so a
   * record is created once whatever was stopped when; a row whose stream exists is compared with it.
   */
  async customers(rows: CheckedRow[]): Promise<Outcome[]> {
    const metadata = this.metadata();
    return Promise.all(rows.map(async (row) => (this.dryRun ? this.existing(row) : this.create(row, metadata))));
  }

  private async create(row: CheckedRow, metadata: NewEventMetadata): Promise<Outcome> {
    const { kind } = this.kind;
    try {
      await this.eventStore.appendToStream(streamIdOf(kind, row.id), [importedCreation(kind, row.fields, new Date(row.created * 1000), metadata)], 'no_stream');
      return 'created';
    } catch (error) {
      if (error instanceof RecordErasedError) return [{ field: 'id', message: 'id is the id of a record that was erased: it is not imported again' }];
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
    return this.existing(row);
  }

  /** A row whose record may be in already: skipped when the same, refused when not; 'created' when not there (a dry run's). */
  private async existing(row: CheckedRow): Promise<Outcome> {
    const streamId = streamIdOf(this.kind.kind, row.id);
    const last = await this.eventStore.readLastEvent(streamId);
    if (!last) {
      if (this.dryRun) return 'created';
      throw new Error(`${streamId} was refused as existing, yet has no event`);
    }
    // A record never changed since: its last event is its first, read and opened once.
    const first = last.revision === 0 ? last : (await this.eventStore.readStream(streamId, 0, 1))[0];
    const faults = differences(this.kind.kind, row, this.accountId, first, last);
    return faults.length > 0 ? faults : 'skipped';
  }

  /**
   * One profile, its slug reserved first as the API's create does (SlugReservations): free in the
   * service, and not taken by an earlier row of the file. Profiles are few: one at a time, and the
   * file's slugs are kept in memory.
   */
  async profile(row: CheckedRow): Promise<Outcome> {
    const slug = row.fields.slug;
    const earlier = slug ? this.slugs.get(slugKey(slug)) : undefined;
    if (earlier && earlier.id !== row.id) return [{ field: 'slug', message: `slug is already taken: by the row on line ${earlier.line}` }];
    let outcome: Outcome;
    const [first] = await this.eventStore.readStream(streamIdOf(this.kind.kind, row.id), 0, 1);
    if (first) outcome = await this.existing(row);
    else outcome = (slug && (await this.slugRefused(slug, row.id))) || (this.dryRun ? 'created' : await this.create(row, this.metadata()));
    if (slug && !Array.isArray(outcome)) this.slugs.set(slugKey(slug), { line: row.line, id: row.id });
    return outcome;
  }

  /** The slug's refusal, as the API answers it, when another profile holds it; else undefined, and reserved for the profile (unless a dry run). */
  private async slugRefused(slug: string, profileId: string): Promise<FieldFault[] | undefined> {
    if (this.dryRun) return (await this.reservations.isTaken(slug, profileId)) ? [{ field: 'slug', message: 'slug is already taken' }] : undefined;
    try {
      await this.reservations.reserve(slug, profileId, this.metadata());
      return undefined;
    } catch (error) {
      if (error instanceof Refusal && error.details) return error.details;
      throw error;
    }
  }
}

/**
 * Brings every read model (the records', the change feed's index) up to the store's head as the
 * service does when it starts (ProjectionsService): where an instance of the service holds a read
 * model's lease, it folds and this waits for it; where none does, this takes the lease and folds,
 * by a rebuild when far behind (a large import: several times faster than folding into the live
 * indexes), then gives the lease back.
 */
async function foldImported(eventStore: EventStore, readStore: ReadStore, config: Omit<AppConfig, 'accessTokens'>, signal: AbortSignal): Promise<void> {
  const head = await eventStore.headPosition();
  const service = new ProjectionsService(READ_MODELS, eventStore, readStore, config as AppConfig);
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  const behind = () => Math.max(0, ...service.projectors.map((p) => (p.state === 'starting' ? null : eventStore.eventsBetween(p.checkpoint, head)) ?? 0));
  const rebuilding = () => service.projectors.some((p) => p.state === 'starting');
  const timer = setInterval(
    () =>
      process.stderr.write(
        `${tty ? '\r\x1b[K' : ''}Read models: ${rebuilding() ? 'rebuilding (far behind the events)' : `${count(behind())} events to fold`}${tty ? '' : '\n'}`,
      ),
    tty ? TTY_EVERY_MS : LINE_EVERY_MS,
  );
  try {
    await service.onApplicationBootstrap();
    // A read model caught up by a rebuild starts its projector once promoted.
    while (rebuilding() && !signal.aborted) await sleep(100);
    const failed = service.projectors.find((p) => p.state === 'failed');
    if (failed) throw failed.failure ?? new Error(`The read model ${failed.projection.name} stopped`);
    const reached = Promise.all(service.projectors.map((p) => p.waitFor(head, 24 * 3600_000)));
    await Promise.race([reached, new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))]);
    if (!signal.aborted)
      process.stderr.write(`${tty ? '\r\x1b[K' : ''}Read models and the change feed have every row (${duration((Date.now() - started) / 1000)})\n`);
  } finally {
    clearInterval(timer);
    await service.onModuleDestroy();
  }
}

/** Rows, rows a second and the time left (by the bytes of the file read), on stderr. */
class ImportProgress {
  private readonly started = Date.now();
  private last = 0;
  private readonly tty = process.stderr.isTTY === true;

  constructor(private readonly size: number) {}

  update(counts: ImportCounts, bytes: number, final = false): void {
    const now = Date.now();
    if (!final && now - this.last < (this.tty ? TTY_EVERY_MS : LINE_EVERY_MS)) return;
    this.last = now;
    const seconds = (now - this.started) / 1000;
    const rate = seconds > 0 ? counts.read / seconds : 0;
    const left = bytes > 0 && seconds > 0 ? (this.size - bytes) / (bytes / seconds) : Infinity;
    const share = this.size > 0 ? Math.min(100, Math.floor((bytes / this.size) * 100)) : 100;
    const text = final
      ? `${count(counts.read)} rows in ${duration(seconds)}, ${count(rate)} rows/s`
      : `${share}%  ${count(counts.read)} rows  ${count(rate)} rows/s  ${duration(left)} left`;
    process.stderr.write(this.tty ? `\r\x1b[K${text}${final ? '\n' : ''}` : `${text}\n`);
  }
}

/**
 * `npm run cli -- import ...`, from its arguments to its exit code: usage errors (2) print the
 * help; the stores are opened as the other commands open them (`open`), and closed.
 */
export async function importCommand(argv: string[], open: () => Promise<{ eventStore: EventStore; readStore: ReadStore }>): Promise<number> {
  let invocation;
  try {
    invocation = importInvocation(argv);
  } catch (error) {
    if (!(error instanceof ImportUsageError)) throw error;
    process.stderr.write(`${error.message}\n\n${IMPORT_HELP}`);
    return 2;
  }
  if ('help' in invocation) {
    process.stdout.write(invocation.help);
    return 0;
  }
  const stores = await open();
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupt.abort());
  try {
    return await runImport(invocation, stores, interrupt.signal);
  } finally {
    await stores.eventStore.close();
    await stores.readStore.close();
  }
}
