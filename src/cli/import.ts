import { Logger } from '@nestjs/common';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig, parseAccessTokens, TOKEN_FILE } from '../config/config';
import type { FieldFault } from '../errors';
import { Refusal } from '../errors';
import {
  AppendOutcome,
  comparePositions,
  EventStore,
  NewEventMetadata,
  Position,
  RecordErasedError,
  START,
  StoredEvent,
  StreamTombstonedError,
  WrongExpectedRevisionError,
} from '../event-store/event-store.port';
import { slugKey } from '../profiles/profile.decider';
import { SlugReservations } from '../profiles/slug-reservations';
import type { ReadStore } from '../read-store/read-store.port';
import { importedCreation, readRecord } from '../records/handle-command';
import { streamIdOf } from '../records/record';
import type { RecordWriter } from '../records/record-writer';
import { formatOf, readRows } from './import-file';
import { FoldAlongside, foldImported } from './import-fold';
import { checkRow, CheckedRow, differences, IMPORT_KINDS, ImportKind } from './import-rows';
import { count, duration } from './output';
import { operator } from './parked';
import { IMPORT_HELP } from './import-help';

/**
 * A file of more rows than this (by its size, ROW_BYTES a row) may be folded into the read models as
 * it is imported (see foldsAlongside): as many as put the read models far enough behind for the
 * service to catch up by a rebuild (CATCH_UP_BY_REBUILD_EVENTS), which the fold at the end would do.
 */
const FOLD_ALONGSIDE_ROWS = 10_000;
const ROW_BYTES = 250;
/**
 * Rows' reads under way at once: on EventStoreDB each is a call over one connection (whose server
 * takes 100 at a time), and a batch's thousands sent together would queue past their deadline.
 */
const READS_AT_ONCE = 32;

/** `read` of every item, READS_AT_ONCE under way at a time; the results in the items' order. */
async function fewAtATime<T, R>(items: T[], read: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += READS_AT_ONCE)
    results.push(...(await Promise.all(items.slice(i, i + READS_AT_ONCE).map((item, k) => read(item, i + k)))));
  return results;
}
/** Batches under way at once: the next is checked while one is written. */
const IN_FLIGHT = 2;
/** How much V8 grows the heap after a collection, in percent of what is live (see importCommand). */
const HEAP_GROWING_PERCENT = 100;
const TTY_EVERY_MS = 200;
const LINE_EVERY_MS = 5000;

export class ImportUsageError extends Error {}

export interface ImportInvocation {
  kind: ImportKind;
  file: string;
  accountId: string;
  dryRun: boolean;
}

/** What the import's memory allows (config/memory.ts's plan). */
interface ImportSizing {
  /**
   * Rows appended at once (10,000 with no limit): one transaction of the event store, one of the
   * key store; IN_FLIGHT of them under way, the fold at most as many rows behind. Each row's insert
   * goes to a random place of the stores' indexes (event, stream and key ids), and each page it
   * changes is written out with its transaction: the more rows a transaction holds, the more of
   * them share a page (at a million records, a batch of 2,000 wrote a page per row and index).
   */
  batchRows: number;
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
  { batchRows }: ImportSizing,
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
  // A large import is folded as it goes, unless the service runs and folds it (FoldAlongside).
  const fold = (await foldsAlongside(eventStore, file, dryRun))
    ? await FoldAlongside.start(eventStore, readStore, config, IN_FLIGHT * batchRows, signal)
    : undefined;
  const inFlight: Promise<{ rows: CheckedRow[]; outcomes: Outcome[] }>[] = [];
  const settle = async () => {
    const { rows, outcomes } = await inFlight.shift()!;
    rows.forEach((row, i) => tell(row.line, outcomes[i]));
    if (fold) await fold.keepUp(importer.appended);
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
    if (batch.length >= batchRows) {
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
  try {
    if (!signal.aborted) await fold?.finish();
    if (!dryRun && !signal.aborted && counts.created > 0)
      await foldImported(eventStore, readStore, config, { streamId: streamIdOf(kind.kind, ''), position: importer.appended }, signal);
  } finally {
    await fold?.close();
  }
  process.stdout.write(
    `${dryRun ? 'Dry run: nothing written. ' : ''}Rows read: ${count(counts.read)}, ${dryRun ? 'to create' : 'created'}: ${count(counts.created)}, skipped: ${count(counts.skipped)}, refused: ${count(counts.refused)}\n`,
  );
  if (signal.aborted) {
    process.stderr.write('Interrupted: run the same command again to import the rest (rows already in are skipped).\n');
    return 130;
  }
  return counts.refused > 0 ? 1 : 0;
}

/**
 * Whether to fold the rows as they are appended (FoldAlongside: a rebuild of every event): a large
 * file, larger than the store (by its size, ROW_BYTES a row). Not a file run again into a store that
 * has its rows already, most of which it skips: that one folds what it created at its end.
 */
async function foldsAlongside(eventStore: EventStore, file: string, dryRun: boolean): Promise<boolean> {
  const rows = statSync(file).size / ROW_BYTES;
  return !dryRun && rows > FOLD_ALONGSIDE_ROWS && rows > (eventStore.eventsBetween(START, await eventStore.headPosition()) ?? Infinity);
}

/** Writes (or, on a dry run, checks) the rows of one import. */
class Importer {
  private readonly importId = randomUUID();
  private readonly by = operator();
  /** Profiles: the slugs of the rows taken so far (by key), with their line and id: unique in the file too. */
  private readonly slugs = new Map<string, { line: number; id: string }>();
  private readonly reservations: SlugReservations<Pick<RecordWriter, 'load'>>;
  /** The position of the last record event appended (a creation: never a slug's). */
  appended: Position = START;
  /** Whether the last batch found rows in already: the next one looks its rows up first (see customers). */
  private foundIn = true;

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
   * A batch of rows (customers), appended together (appendToStreams: on SQLite one transaction of
   * the event store, the keys made in one of the key store), each at 'no_stream', so a record is
   * created once whatever was stopped when; a row whose stream exists is compared with it. While
   * the file's rows are found in already (a run again), each row's record is looked up first
   * (lookFirst): one in costs no seal nor append, only its comparison. Once a batch finds none
   * in, the next ones go straight to their append (a lookup costs about a twentieth of a row's
   * work on this thread), until an append is refused as existing. Either way a record in already
   * costs no key (see makeKeys in sealing/open-worker.ts).
   */
  async customers(rows: CheckedRow[]): Promise<Outcome[]> {
    const { kind } = this.kind;
    const lookFirst = this.dryRun || this.foundIn;
    const lasts = lookFirst ? await fewAtATime(rows, (row) => this.eventStore.readLastEvent(streamIdOf(kind, row.id))) : [];
    const outcomes: (Outcome | undefined)[] = lookFirst ? await fewAtATime(rows, async (row, i) => (lasts[i] ? this.existing(row, lasts[i]) : undefined)) : [];
    const fresh = rows.flatMap((row, i) => (lasts[i] ? [] : [{ row, i }]));
    if (this.dryRun || fresh.length === 0) return outcomes.map((outcome) => outcome ?? 'created');
    const metadata = this.metadata();
    const appended = await this.eventStore.appendToStreams(
      fresh.map(({ row }) => ({
        streamId: streamIdOf(kind, row.id),
        events: [importedCreation(kind, row.fields, new Date(row.created * 1000), metadata)],
        expected: 'no_stream',
      })),
    );
    for (const o of appended) if ('result' in o && comparePositions(o.result.position, this.appended) > 0) this.appended = o.result.position;
    await fewAtATime(fresh, async ({ row, i }, k) => (outcomes[i] = await this.outcomeOf(row, appended[k])));
    this.foundIn = lasts.some(Boolean) || appended.some((o) => 'error' in o);
    return outcomes as Outcome[];
  }

  private async create(row: CheckedRow, metadata: NewEventMetadata): Promise<Outcome> {
    const { kind } = this.kind;
    const [outcome] = await this.eventStore.appendToStreams([
      { streamId: streamIdOf(kind, row.id), events: [importedCreation(kind, row.fields, new Date(row.created * 1000), metadata)], expected: 'no_stream' },
    ]);
    if ('result' in outcome && comparePositions(outcome.result.position, this.appended) > 0) this.appended = outcome.result.position;
    return this.outcomeOf(row, outcome);
  }

  /** A row's append answered: created, or (its stream exists) compared with what is stored. */
  private async outcomeOf(row: CheckedRow, outcome: AppendOutcome): Promise<Outcome> {
    if ('result' in outcome) return 'created';
    const { error } = outcome;
    if (error instanceof RecordErasedError) return [{ field: 'id', message: 'id is the id of a record that was erased: it is not imported again' }];
    // EventStoreDB's stream deleted for good (by an operator): no append can make it again.
    if (error instanceof StreamTombstonedError)
      return [{ field: 'id', message: 'id is the id of a record whose stream was deleted for good: it cannot be imported' }];
    if (!(error instanceof WrongExpectedRevisionError)) throw error;
    return this.existing(row);
  }

  /** A row whose record may be in already (its last event, if read): skipped when the same, refused when not; 'created' when not there (a dry run's). */
  private async existing(row: CheckedRow, known?: StoredEvent): Promise<Outcome> {
    const streamId = streamIdOf(this.kind.kind, row.id);
    const last = known ?? (await this.eventStore.readLastEvent(streamId));
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
    const last = await this.eventStore.readLastEvent(streamIdOf(this.kind.kind, row.id));
    if (last) outcome = await this.existing(row, last);
    else {
      const claim = slug ? await this.claim(slug, row.id) : undefined;
      if (Array.isArray(claim)) outcome = claim;
      else {
        outcome = this.dryRun ? 'created' : await this.create(row, this.metadata());
        // Refused after its slug was claimed (an erased record's id, a stream deleted for good, a
        // profile created meanwhile with other values): the claim is given back, up to its own
        // position (a newer one is another write's), else it holds the slug for its grace period.
        if (claim && Array.isArray(outcome)) await this.giveBack(slug, row.id, claim);
      }
    }
    if (slug && !Array.isArray(outcome)) this.slugs.set(slugKey(slug), { line: row.line, id: row.id });
    return outcome;
  }

  /**
   * The slug reserved for the profile (the reservation's position), or its refusal as the API
   * answers it when another profile holds it. A dry run reserves nothing: undefined when free.
   */
  private async claim(slug: string, profileId: string): Promise<FieldFault[] | Position | undefined> {
    if (this.dryRun) return (await this.reservations.isTaken(slug, profileId)) ? [{ field: 'slug', message: 'slug is already taken' }] : undefined;
    try {
      return await this.reservations.reserve(slug, profileId, this.metadata());
    } catch (error) {
      if (error instanceof Refusal && error.details) return error.details;
      throw error;
    }
  }

  /** Releases the profile's claim on the slug; should that fail, the claim lapses after its grace period, and the import goes on. */
  private async giveBack(slug: string, profileId: string, claimed: Position): Promise<void> {
    try {
      await this.reservations.release(slug, profileId, this.metadata(), claimed);
    } catch (error) {
      const tty = process.stderr.isTTY === true; // the progress line, ended first
      process.stderr.write(`${tty ? '\n' : ''}Left the reservation of slug "${slug}" to lapse after its grace period: ${(error as Error).message}\n`);
    }
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
export async function importCommand(
  argv: string[],
  open: (settings: { cacheMiB: number; rebuildRowids: number }) => Promise<{ eventStore: EventStore; readStore: ReadStore }>,
  tellMemory: (more: string[], settings: { rebuildRowids: number }) => void,
): Promise<number> {
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
  // After each collection the heap may grow to twice what is live, no more: V8 would let a bulk run's
  // garbage pile up to four times that (about 200 MiB more at peak), for a few percent more CPU.
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  // The CLI is sized as one process given the whole limit (memory-sizing.ts); a REBUILD_ROWIDS of your own wins.
  const config = loadConfig();
  const { importBatchRows, importCacheMiB, importRowids } = config.memory.server;
  const rebuildRowids = process.env.REBUILD_ROWIDS?.trim() ? config.rebuildRowids : importRowids;
  const stores = await open({ cacheMiB: importCacheMiB, rebuildRowids });
  tellMemory([`import batches of ${importBatchRows} rows`, `SQLite page caches of ${importCacheMiB} MiB`], { rebuildRowids });
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupt.abort());
  try {
    return await runImport(invocation, stores, { batchRows: importBatchRows }, interrupt.signal);
  } finally {
    await stores.eventStore.close();
    await stores.readStore.close();
  }
}
