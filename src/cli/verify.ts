import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore } from '../event-store/event-store.port';
import type { Projection } from '../projections/projection';
import { verifyReadModels, type VerifyOptions, type VerifyReport } from '../projections/verify';
import type { ReadStore } from '../read-store/read-store.port';
import { openReadStore } from '../stores/stores.module';
import { count, formatTable } from './output';
import { ProgressReporter } from './progress';

export const VERIFY_HELP = `Usage: npm run cli -- verify [--json]

Folds every event again and compares each read model (profiles, customers, feed) with the result,
record by record: per read model and account, the rows and a checksum of them, how many differ,
and then each record that differs, by id, with the names of what differs (never a value: they are
personal data, kept out of a terminal's log). Useful after an import, a restore, or a parked
event skipped. The service may run and write meanwhile: nothing is changed, and a write made
during the verify is not a difference. A parked stream's record (see projections parked) is
expected to lag: it is listed as parked, not as a difference.

The fold goes to a scratch copy of the read models in a private temporary directory (TMPDIR),
deleted when the command ends, Ctrl-C included. Progress goes to stderr.

Exit 0 when every record agrees, 1 when one differs (rebuild that read model: projections
rebuild <name>), 130 when interrupted.

Options:
  --json    One JSON document instead of the tables
  --help    This help
`;

/** The scratch directories' prefix; a directory whose process is gone (killed with kill -9) is deleted by the next verify. */
const SCRATCH_PREFIX = 'profiles-customers-verify-';

/**
 * Verifies the read models against a scratch read store of their own, made in a private temporary
 * directory and deleted at the end: it holds a copy of the records' values, as the read models do.
 */
export async function verifyStores(readModels: Projection[], eventStore: EventStore, readStore: ReadStore, options: VerifyOptions): Promise<VerifyReport> {
  removeAbandonedScratch();
  const dir = mkdtempSync(join(tmpdir(), `${SCRATCH_PREFIX}${process.pid}-`));
  try {
    const scratch = await openReadStore({ sqliteFile: join(dir, 'scratch.sqlite') });
    try {
      return await verifyReadModels(readModels, eventStore, readStore, scratch, options);
    } finally {
      await scratch.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Scratch directories left by a verify whose process no longer runs. */
function removeAbandonedScratch(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = name.startsWith(SCRATCH_PREFIX) ? Number(name.slice(SCRATCH_PREFIX.length).split('-')[0]) : NaN;
    if (Number.isSafeInteger(pid) && pid !== process.pid && !running(pid)) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `verify`: the report on stdout, progress on stderr; exit 0 when every record agrees, else 1. */
export async function verify(
  readModels: Projection[],
  eventStore: EventStore,
  readStore: ReadStore,
  { json, signal }: { json: boolean; signal: AbortSignal },
): Promise<{ text: string; code: number }> {
  const progress = new ProgressReporter();
  const compared = new ComparedReporter();
  let report: VerifyReport;
  try {
    report = await verifyStores(readModels, eventStore, readStore, {
      signal,
      onProgress: (p) => progress.update({ ...p, projection: `folding ${p.projection}` }),
      onCompared: (readModel, rows, done) => {
        progress.end();
        compared.update(readModel, rows, done);
      },
    });
  } finally {
    progress.end();
    compared.end();
  }
  return { text: json ? JSON.stringify(report, null, 2) + '\n' : formatReport(report), code: report.agree ? 0 : 1 };
}

/** Rows compared so far, on stderr: a line redrawn on a terminal, one every few seconds otherwise. */
class ComparedReporter {
  private last = 0;
  private drawn = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  update(readModel: string, rows: number, done: boolean): void {
    const now = Date.now();
    if (!done && now - this.last < (this.stream.isTTY ? 100 : 2000)) return;
    this.last = now;
    const line = `comparing ${readModel}: ${count(rows)} rows${done ? ', done' : ''}`;
    this.stream.write(this.stream.isTTY ? `\r\x1b[K${line}${done ? '\n' : ''}` : `${line}\n`);
    this.drawn = this.stream.isTTY === true && !done;
  }

  end(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}

/** Both sides' figure, or the one when they agree. */
const both = (events: string, stored: string) => (events === stored ? events : `${events} (read model: ${stored})`);

function formatReport(report: VerifyReport): string {
  const lines = [
    `Folded the events up to position ${report.position}; each record compared at the read model's checkpoint (or its own later revision).`,
    '',
    formatTable(
      ['READ MODEL', 'ACCOUNT', 'ROWS', 'CHECKSUM', 'DIFFERING', 'PARKED'],
      report.accounts.map((a) => [
        a.readModel,
        a.accountId,
        both(count(a.events.rows), count(a.stored.rows)),
        both(a.events.checksum, a.stored.checksum),
        count(a.differing),
        count(a.parked),
      ]),
    ).trimEnd(),
  ];
  if (report.differences.length > 0) {
    lines.push('', 'Records that differ (what differs is named, never a value):');
    lines.push(
      formatTable(
        ['READ MODEL', 'ACCOUNT', 'ID', 'STREAM', 'DIFFERENCE'],
        report.differences.map((d) => [d.readModel, d.accountId, d.id, d.streamId, describe(d.problem, d.fields)]),
      ).trimEnd(),
    );
  }
  if (report.parked.length > 0) {
    lines.push('', 'Parked streams, whose records lag as expected (see projections parked):');
    lines.push(
      formatTable(
        ['READ MODEL', 'ACCOUNT', 'STREAM', 'PARKED AT REVISION'],
        report.parked.map((p) => [p.readModel, p.accountId || '?', p.streamId, String(p.revision)]),
      ).trimEnd(),
    );
  }
  if (report.unlisted > 0) lines.push('', `${count(report.unlisted)} more records differing or parked are counted above but not listed.`);
  const differing = report.accounts.reduce((n, a) => n + a.differing, 0);
  lines.push(
    '',
    report.agree
      ? 'Every read model agrees with the events.'
      : `${count(differing)} record${differing === 1 ? '' : 's'} differ from the events: npm run cli -- projections rebuild <name> replaces a read model with a fold of the events.`,
  );
  return lines.join('\n') + '\n';
}

function describe(problem: VerifyReport['differences'][number]['problem'], fields: string[]): string {
  switch (problem) {
    case 'missing':
      return 'missing from the read model';
    case 'extra':
      return 'no event makes this row';
    case 'differs':
      return `differs: ${fields.join(', ')}`;
    case 'unfoldable':
      return 'an event of it cannot be folded, and its stream is not parked';
    case 'unreadable':
      return 'its events cannot be read now';
  }
}
