import './runtime';
// Second: a process restarted with its heap flags must load nothing before (memory-sizing.ts).
import { memoryReport, sizedCommand } from './memory-sizing';
import { tracing } from './tracing/register';
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BACKUP_HELP, backupCommand, RESTORE_HELP } from './cli/backup';
import { ERASURES_APPLY_HELP, erasuresApply } from './cli/erasures';
import { eventsTail, feedTail } from './cli/events';
import { IMPORT_HELP } from './cli/import-help';
import { failureLine, MissingStoreError } from './cli/output';
import { operator, projectionsParked, requestOnParked } from './cli/parked';
import { projectionsRebuild, projectionsStatus } from './cli/projections';
import { verify, VERIFY_HELP } from './cli/verify';
import { AppConfig, loadConfig } from './config/config';
import { REBUILD_GRACE_MS, RebuildInterruptedError } from './projections/rebuild';
import { READ_MODELS, RECORD_KINDS } from './read-models';
import { openStores, usesSqliteFile } from './stores/stores.module';

// Operator commands, run beside the service against the same stores: `node dist/cli.js <command>`
// (`npm run cli -- <command>`). Exit codes: 0 done, 1 failed, 2 usage error, 130 interrupted.

const NAMES = READ_MODELS.map((p) => p.name).join(', ');
const DEFAULT_GRACE_SECONDS = REBUILD_GRACE_MS / 1000;
/** A day: longer is no grace period anyone means (and past about 24 days Node's timers fire at once). */
const MAX_GRACE_SECONDS = 86_400;
/** How long retry and skip wait for the service to carry them out, by default. */
const DEFAULT_WAIT_SECONDS = 30;

const HELP: Record<string, string> = {
  main: `Usage: npm run cli -- <command> [options]     (or: node dist/cli.js <command> [options])

Commands:
  projections status                Each read model's checkpoint, the event store's head, the lag
                                    in events (unknown on EventStoreDB), any rebuild under way, the
                                    streams parked and any poison event it stopped on
  projections rebuild <name|all>    Replay every event into fresh storage and swap it in
  projections parked                Each parked stream per read model, and the events skipped
  projections retry <stream|all>    Fold a parked stream's events again, unparking it if they fold
  projections skip <stream> --reason <text>
                                    Drop a parked stream's first parked event for good, fold the rest
  events tail [--stream <id>]       Print events as they are appended, one JSON line each
  events tail --url <address>       Follow the change feed of a running service, one entry a line
  backup <dir>                      Copy the events, read models and keys, consistent, beside the running service
  restore <dir>                     Restore a backup into an empty DATA_DIR, erasing again what was erased since
  erasures apply                    Apply the erasure log again to stores restored by hand, before the start
  verify [--json]                   Fold the events again and compare every read model with them
  import <profiles|customers> <file> --account <id> [--dry-run]
                                    Move records in from an NDJSON or CSV export, keeping their ids
                                    and creation times

Run a command with --help for its options. Configuration comes from the environment, as for the
service (DATA_DIR, ...).
`,
  'projections status': `Usage: npm run cli -- projections status [--json]

Shows, per read model (${NAMES}): its live storage generation, its checkpoint,
how many events it is behind the event store's head (unknown on EventStoreDB, whose positions
are byte offsets), whether a rebuild is running (or was interrupted), how many streams it holds
parked (see projections parked), and the event it stopped on if it met one it cannot apply
(with POISON_EVENTS=stop).

Options:
  --json    One JSON document instead of the table
  --help    This help
`,
  'projections parked': `Usage: npm run cli -- projections parked [--json]

Shows, per read model (${NAMES}), each stream parked at an event it cannot fold (with
POISON_EVENTS=park): the first parked event (revision, position, type), the error, and how many
events of the stream wait behind it; then the events skipped for good (who, when, why).

Options:
  --json    One JSON document instead of the tables
  --help    This help
`,
  'projections retry': `Usage: npm run cli -- projections retry <stream|all> [--timeout-seconds <n>]

Folds the parked events of the stream (or of every parked stream) again, in order, after a fix is
deployed, and unparks it when they all fold; one that still fails keeps it parked, at that event.
With the service running, the instance that folds the read model does it at its next poll, and
this command waits for it; with no service running, it does it itself.

Options:
  --timeout-seconds <n>   How long to wait for the service (default ${DEFAULT_WAIT_SECONDS})
  --help                  This help
`,
  'projections skip': `Usage: npm run cli -- projections skip <stream> --reason <text> [--timeout-seconds <n>]

Drops the first parked event of the stream from the read models where it is parked, for good,
recorded with who ran the command (the OS user), when and why (shown by projections parked), and
folds the events after it. A rebuild folds every event again: it parks the event again (--park),
or stops on it.

Options:
  --reason <text>         Why (required)
  --timeout-seconds <n>   How long to wait for the service (default ${DEFAULT_WAIT_SECONDS})
  --help                  This help
`,
  'projections rebuild': `Usage: npm run cli -- projections rebuild <name|all> [--json] [--grace-seconds <n>] [--park]

Replays every event into fresh storage for the read model (${NAMES}, or all),
with a progress bar on stderr, then swaps it in atomically. The service keeps serving reads
from the old storage meanwhile; events appended during the rebuild are in the result. The old
storage is dropped after the grace period. Ctrl-C leaves the live read model untouched: run
the command again. Ctrl-C during the grace period leaves the old storage for the next rebuild
or the service's next start to drop.

Options:
  --json                One JSON document instead of the table
  --grace-seconds <n>   How long the replaced storage stays readable before it is dropped (default ${DEFAULT_GRACE_SECONDS}, at most ${MAX_GRACE_SECONDS})
  --park                Park the streams of events it cannot fold (see projections parked) and
                        go on; without it, such an event stops the rebuild, the live model unchanged
  --help                This help
`,
  verify: VERIFY_HELP,
  'events tail': `Usage: npm run cli -- events tail [--stream <id>]
       npm run cli -- events tail --url <address> [--token <token>] [--after <cursor>]

Without --url: prints every event appended to the store from now on, one JSON line each, as
stored (values sealed), until Ctrl-C.

With --url: follows the change feed of the running service at that address (GET /v1/events),
with an access token of the account to follow: prints each entry (a CloudEvents JSON object:
its id is its cursor) on a line of its own, from the beginning of the account's feed or after
--after, then new ones as they are stored, until Ctrl-C. It says on stderr the cursor to
resume from. A service down or busy is asked again; a token or cursor it refuses ends it (exit 1).

Options:
  --stream <id>      Only the events of this stream, e.g. customer-<uuid> (without --url)
  --url <address>    The service's address, e.g. http://localhost:3000
  --token <token>    The access token; default: the ACCESS_TOKEN environment variable (which
                     keeps it out of the process list)
  --after <cursor>   Resume after this cursor: an entry's id, or the one the last run gave
  --help             This help
`,
  backup: BACKUP_HELP,
  restore: RESTORE_HELP,
  'erasures apply': ERASURES_APPLY_HELP,
  import: IMPORT_HELP,
};

class UsageError extends Error {}

/** Which stores the command works on, for stderr: connection strings are named, never shown (they may hold a password). */
function storesOf(config: Omit<AppConfig, 'accessTokens'>): string {
  const sqlite = `the SQLite file ${config.sqliteFile}`;
  if (!config.eventStoreConnectionString && !config.mongodb) return `Store: ${sqlite}`;
  const events = config.eventStoreConnectionString ? 'EventStoreDB (EVENTSTORE_CONNECTION_STRING)' : sqlite;
  const reads = config.mongodb ? `MongoDB database ${config.mongodb.database} (MONGODB_URI)` : sqlite;
  return `Events: ${events}; read models: ${reads}`;
}

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  stream: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  after: { type: 'string' },
  'grace-seconds': { type: 'string' },
  park: { type: 'boolean' },
  reason: { type: 'string' },
  'timeout-seconds': { type: 'string' },
} as const;

/** The command named by the first words, when there is one: its usage goes with a usage error. */
function commandOf(positionals: string[]): string | undefined {
  const [group, action] = positionals;
  const command = group && action && !isCommand(group) ? `${group} ${action}` : group;
  return command && isCommand(command) ? command : undefined;
}

/**
 * The arguments, or a usage error of our own: parseArgs's messages suggest a `--` that `npm run`
 * swallows, and do not say which command they are about.
 */
function parse(argv: string[]) {
  // A cursor may begin with "-", which parseArgs would take for an option of its own.
  const args = argv.flatMap((arg, i) => (arg === '--after' && i + 1 < argv.length ? [] : argv[i - 1] === '--after' && i > 0 ? [`--after=${arg}`] : [arg]));
  try {
    return parseArgs({ args, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (!code?.startsWith('ERR_PARSE_ARGS')) throw error;
    const command = commandOf(parseArgs({ args, allowPositionals: true, strict: false, options: OPTIONS }).positionals);
    const option = /'(-[^' ]+)/.exec((error as Error).message)?.[1] ?? 'an option';
    const message = code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? `${option} needs a value.` : `${command ?? 'The CLI'} has no option ${option}.`;
    throw new UsageError(message, { cause: command });
  }
}

/** The options each command takes. */
const COMMAND_OPTIONS = {
  'projections status': ['json'],
  'projections rebuild': ['json', 'grace-seconds', 'park'],
  'projections parked': ['json'],
  'projections retry': ['timeout-seconds'],
  'projections skip': ['reason', 'timeout-seconds'],
  'events tail': ['stream', 'url', 'token', 'after'],
  backup: [] as string[],
  restore: [] as string[],
  'erasures apply': [] as string[],
  verify: ['json'],
};

type Command = keyof typeof COMMAND_OPTIONS;
const isCommand = (command: string): command is Command => Object.hasOwn(COMMAND_OPTIONS, command);

type Stores = Awaited<ReturnType<typeof openStores>>;

/** A command line checked in full, before the stores are opened, so a usage error is told as one wherever it is run. */
interface Invocation {
  command: Command;
  values: ReturnType<typeof parse>['values'];
  /** The read models a rebuild replays. */
  readModels: typeof READ_MODELS;
  graceMs: number;
  /** retry and skip: the stream (or all), and how long to wait for the service. */
  stream?: string;
  /** backup and restore: the backup's directory. */
  directory?: string;
  waitMs: number;
  /** events tail --url: the service whose change feed is followed, instead of the stores. */
  feed?: { url: string; token: string; after?: string };
}

/** What the command line asks for: a command to run, or a help to print. */
function invocationOf(argv: string[]): Invocation | { help: string } {
  const { values, positionals } = parse(argv);
  const [group] = positionals;
  // A command of one word (backup <dir>) takes the next word as its argument.
  const single = isCommand(group ?? '');
  const action = single ? undefined : positionals[1];
  const rest = positionals.slice(single ? 1 : 2);
  const command = group && action ? `${group} ${action}` : group;
  if (!command && values.help) return { help: HELP.main };
  if (!command) throw new UsageError('No command given.');
  const actions = Object.keys(HELP).filter((c) => c.startsWith(`${group} `));
  if (!action && actions.length > 0) throw new UsageError(`"${group}" needs an action: ${actions.join(' or ')}.`);
  if (!isCommand(command)) throw new UsageError(`Unknown command "${command}".`);
  if (values.help) return { help: HELP[command] };
  return checked(command, values, rest);
}

/** The command's options and arguments, checked. */
function checked(command: Command, values: Invocation['values'], args: string[]): Invocation {
  const misplaced = Object.keys(values).find((o) => !COMMAND_OPTIONS[command].includes(o));
  if (misplaced) throw new UsageError(`${command} has no option --${misplaced}.`, { cause: command });
  const wanted = ['projections rebuild', 'projections retry', 'projections skip', 'backup', 'restore'].includes(command) ? 1 : 0;
  if (args.length !== wanted) {
    const what =
      command === 'projections rebuild'
        ? `one read model name (${NAMES}) or all`
        : command === 'projections retry'
          ? 'one stream id or all'
          : command === 'backup' || command === 'restore'
            ? 'one directory'
            : 'one stream id';
    throw new UsageError(wanted ? `${command} needs ${what}.` : `${command} takes no arguments.`, { cause: command });
  }
  if (command === 'projections skip' && args[0] === 'all') throw new UsageError('projections skip takes one stream id at a time, not all.', { cause: command });
  if (command === 'projections skip' && !values.reason?.trim())
    throw new UsageError('projections skip needs --reason <text>: it is recorded.', { cause: command });
  const wait = values['timeout-seconds'] ?? String(DEFAULT_WAIT_SECONDS);
  if (!/^\d+$/.test(wait) || Number(wait) < 1 || Number(wait) > MAX_GRACE_SECONDS) {
    throw new UsageError(`--timeout-seconds must be a whole number of seconds from 1 to ${MAX_GRACE_SECONDS}; got "${wait}".`, { cause: command });
  }
  const parkedCommand = command === 'projections retry' || command === 'projections skip';
  const readModels = args[0] === 'all' || parkedCommand ? READ_MODELS : READ_MODELS.filter((p) => p.name === args[0]);
  if (command === 'projections rebuild' && readModels.length === 0) {
    throw new UsageError(`No read model named "${args[0]}": use ${NAMES} or all.`, { cause: command });
  }
  const grace = values['grace-seconds'] ?? String(DEFAULT_GRACE_SECONDS);
  if (!/^\d+$/.test(grace) || Number(grace) > MAX_GRACE_SECONDS) {
    throw new UsageError(`--grace-seconds must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS}; got "${grace}".`, { cause: command });
  }
  return {
    command,
    values,
    readModels,
    graceMs: Number(grace) * 1000,
    ...(parkedCommand ? { stream: args[0] } : {}),
    ...(command === 'backup' || command === 'restore' ? { directory: args[0] } : {}),
    waitMs: Number(wait) * 1000,
    feed: feedOf(command, values),
  };
}

/** events tail --url's service and token, checked; undefined for the store's tail. */
function feedOf(command: Command, values: Invocation['values']): Invocation['feed'] {
  if (values.url === undefined) {
    const misplaced = (['token', 'after'] as const).find((o) => values[o] !== undefined);
    if (misplaced) throw new UsageError(`--${misplaced} goes with --url.`, { cause: command });
    return undefined;
  }
  if (values.stream !== undefined)
    throw new UsageError('--stream tails the store: not with --url (the feed tells every record of the account).', { cause: command });
  let url: URL | undefined;
  try {
    url = new URL(values.url);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol)) {
    throw new UsageError(`--url must be the service's http:// or https:// address; got "${values.url}".`, { cause: command });
  }
  const token = values.token ?? process.env.ACCESS_TOKEN;
  if (!token) throw new UsageError('--url needs an access token: --token <token>, or the ACCESS_TOKEN environment variable.', { cause: command });
  return { url: values.url, token, ...(values.after !== undefined ? { after: values.after } : {}) };
}

/** events tail --url: no store is opened; Ctrl-C ends it, exit 0. */
async function followFeed(feed: NonNullable<Invocation['feed']>): Promise<number> {
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupt.abort());
  await feedTail({
    ...feed,
    signal: interrupt.signal,
    write: (line) => process.stdout.write(line),
    notice: (line) => process.stderr.write(`${line}\n`),
  });
  return 0;
}

/** The stores the configuration names, said on stderr; an existing SQLite file only. `settings`: an import's, over the configuration's. */
async function openConfiguredStores({ cacheMiB, rebuildRowids }: { cacheMiB?: number; rebuildRowids?: number } = {}): Promise<Stores> {
  const config = { ...loadConfig(), ...(rebuildRowids === undefined ? {} : { rebuildRowids }) };
  process.stderr.write(`${storesOf(config)}\n`);
  if (usesSqliteFile(config) && !existsSync(config.sqliteFile)) {
    // Opening it would make an empty store and report it healthy: most likely the wrong directory.
    throw new MissingStoreError(
      `No store at ${config.sqliteFile}. Run the command in the service's directory, or set DATA_DIR to its data directory (the service makes the store on its first start).`,
    );
  }
  return openStores(config, RECORD_KINDS, { log: (message) => process.stderr.write(`${message}\n`), cacheMiB });
}

/** A long command's memory line (memory-sizing.ts) on stderr, as the service logs its own: the limit and what the command runs with (`settings`: an import's, over the configuration's). */
function tellMemory(more: string[] = [], settings: { rebuildRowids?: number } = {}): void {
  if (sizedCommand) process.stderr.write(`${memoryReport({ ...loadConfig(), ...settings }, 'server', more)}\n`);
}

/** Runs the command to its exit code; `interrupt` is aborted by Ctrl-C (or SIGTERM). */
async function run(
  { command, values, readModels, graceMs, stream, waitMs }: Invocation,
  { eventStore, readStore }: Stores,
  interrupt: AbortSignal,
): Promise<number> {
  switch (command) {
    case 'projections parked':
      process.stdout.write(await projectionsParked(READ_MODELS, readStore, values.json === true));
      return 0;
    case 'projections retry':
    case 'projections skip': {
      const action = command === 'projections retry' ? 'retry' : 'skip';
      const by = operator();
      if (action === 'skip') process.stderr.write(`Skipping the first parked event of ${stream} for good, by ${by}: ${values.reason}\n`);
      const { text, code } = await requestOnParked(
        READ_MODELS,
        eventStore,
        readStore,
        stream!,
        { action, by, reason: action === 'skip' ? values.reason!.trim() : null },
        { timeoutMs: waitMs, leaseMs: loadConfig().projectionLeaseMs, progress: (line) => process.stderr.write(`${line}\n`) },
      );
      process.stdout.write(text);
      return code;
    }
    case 'projections status':
      process.stdout.write(await projectionsStatus(READ_MODELS, eventStore, readStore, values.json === true));
      return 0;
    case 'projections rebuild':
      process.stdout.write(
        await projectionsRebuild(readModels, eventStore, readStore, { json: values.json === true, graceMs, signal: interrupt, park: values.park === true }),
      );
      return interrupt.aborted ? 130 : 0;
    case 'verify': {
      const { text, code } = await verify(READ_MODELS, eventStore, readStore, { json: values.json === true, signal: interrupt });
      process.stdout.write(text);
      return code;
    }
    case 'events tail':
      await eventsTail(eventStore, { stream: values.stream, signal: interrupt, write: (line) => process.stdout.write(line) });
      return 0; // Ctrl-C is how a tail ends
    case 'backup':
    case 'restore':
    case 'erasures apply':
      throw new Error(`${command} opens the stores itself`); // main runs it before opening them
  }
}

async function main(argv: string[]): Promise<number> {
  // Loaded only for an import: what it checks rows with (the API's field rules) is most of the CLI's start.
  if (argv[0] === 'import') return (await import('./cli/import')).importCommand(argv.slice(1), openConfiguredStores, tellMemory);
  const invocation = invocationOf(argv);
  if ('help' in invocation) {
    process.stdout.write(invocation.help);
    return 0;
  }
  if (invocation.feed) return followFeed(invocation.feed);
  if (invocation.command === 'backup' || invocation.command === 'restore') {
    tellMemory();
    return backupCommand(invocation.command, invocation.directory!);
  }
  if (invocation.command === 'erasures apply') {
    process.stderr.write(`${storesOf(loadConfig())}\n`);
    tellMemory();
    return erasuresApply();
  }
  const stores = await openConfiguredStores();
  tellMemory();
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => interrupt.abort());
  try {
    return await run(invocation, stores, interrupt.signal);
  } catch (error) {
    if (error instanceof RebuildInterruptedError) {
      process.stderr.write(`${error.message}\n`);
      return 130;
    }
    throw error;
  } finally {
    await stores.eventStore.close();
    await stores.readStore.close();
  }
}

// The spans of the command (a rebuild's trace) are exported before the process exits.
main(process.argv.slice(2)).then(
  async (code) => {
    await tracing?.shutdown().catch(() => undefined);
    process.exit(code);
  },
  (error) => {
    if (error instanceof UsageError) {
      const command = typeof error.cause === 'string' ? error.cause : 'main';
      process.stderr.write(`${error.message}\n\n${HELP[command]}`);
      process.exit(2);
    }
    process.stderr.write(`${failureLine(error) ?? (error as Error | undefined)?.stack ?? error}\n`);
    process.exit(1);
  },
);
