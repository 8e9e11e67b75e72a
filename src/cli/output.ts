import { NewerEventsError } from '../event-store/written-versions';
import { ConfigError } from '../config/config';
import { PoisonEventError } from '../projections/fold-batch';
import { GenerationReplacedError } from '../read-store/read-store.port';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import { FeedRefusedError } from './events';

/** A plain text table: a header row, then one row per entry, columns padded to their widest cell. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** 1234567 → "1,234,567". */
export const count = (n: number): string => Math.round(n).toLocaleString('en-US');

export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  // Under ten seconds, tenths: a short rebuild reads "0.3s", not "0s".
  if (seconds < 9.95) return `${Math.max(0, seconds).toFixed(1)}s`;
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** The store is not where the command looked: most likely the wrong directory. */
export class MissingStoreError extends Error {}

const OPEN_REFUSALS = new Set(['EACCES', 'EPERM', 'EROFS', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_PERM']);

/** The file system's or SQLite's refusal to open the store: most likely the wrong user (its files are the service user's only). */
function cannotOpen(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === 'string' && OPEN_REFUSALS.has(code);
}

/** The one line a failure the operator can act on is told in, or undefined for a bug (its stack is printed). */
export function failureLine(error: unknown): string | undefined {
  if (error instanceof ConfigError) return `Configuration error: ${error.message}`;
  if (error instanceof MissingStoreError || error instanceof StoreUnavailableError || error instanceof FeedRefusedError || error instanceof NewerEventsError)
    return error.message;
  if (error instanceof PoisonEventError) return `Rebuild stopped, the live read model is unchanged: ${error.message}`;
  // Two rebuilds of one read model: the later one drops the generation the earlier one fills.
  if (error instanceof GenerationReplacedError) return `Stopped: another rebuild started after this one took its place (${error.message}); that one goes on.`;
  if (cannotOpen(error)) return `Cannot open the store (${error.message}): run the command as the service's user, on its data directory.`;
  return undefined;
}
