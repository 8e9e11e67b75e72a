import { accessSync, constants, createReadStream, existsSync, mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { StoreFullError, StoreUnavailableError } from '../storage/store-unavailable.error';
import type { KeyStore } from './key-store.port';

/** One erasure asked: the record's key id (its stream), the account that asked, when. No value of the record. */
export interface ErasureEntry {
  key: string;
  account: string;
  at: string;
}

/**
 * Erasures handled at once when the log is read again: their keys looked up together, their read
 * model documents scrubbed together (one MongoDB `$in` stays far below its 16 MiB command).
 */
export const LOOKUP_BATCH = 500;

/**
 * The erasure log: an append-only file (ERASURE_LOG, one JSON line per erasure asked) kept apart from
 * the data directory and its backups. A backup holds whatever was there when it was taken, so a
 * restore would bring back the values of everyone erased since; this log, which the restore does not
 * replace, says whom to erase again. Each line is on disk before the record's key is destroyed: an
 * erasure that then fails (a store down) is still carried out, at the next start at the latest.
 * Lines are appended with O_APPEND, each in one write, so the workers of one machine share the file.
 */
export class ErasureLog {
  /** Whether this process has synced the log's directory, once its line is on disk (the file's name with it). */
  private directorySynced = false;

  constructor(readonly file: string) {}

  /** Fails, naming the setting, when the log could not be written: at the start, rather than at the first erasure. */
  checkWritable(): void {
    const target = existsSync(this.file) ? this.file : dirname(this.file);
    try {
      accessSync(target, constants.W_OK);
    } catch (error) {
      throw new Error(
        `The erasure log ${this.file} (ERASURE_LOG) cannot be written: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}. ` +
          'Set ERASURE_LOG to a file this user may write, outside DATA_DIR (see docs/operators.md, Backup and restore)',
        { cause: error },
      );
    }
  }

  /**
   * On disk when it resolves; a failure is the log unavailable (503: the erasure is not made now,
   * and may be asked again; should the line be on disk all the same, the next start makes it). A
   * line a full disk or a power loss cut short is ended first, so that it does not swallow this one
   * (and a line that joined one cut short is still read: `parsed`); a write cut short is a full
   * disk (the file system wrote what fitted).
   */
  async append(entry: ErasureEntry): Promise<void> {
    try {
      mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
      const handle = await open(this.file, 'a+', 0o600);
      try {
        const { size } = await handle.stat();
        const last = Buffer.alloc(1);
        if (size > 0) await handle.read(last, 0, 1, size - 1);
        const line = Buffer.from(`${size > 0 && last[0] !== 0x0a ? '\n' : ''}${JSON.stringify(entry)}\n`);
        const { bytesWritten } = await handle.write(line);
        if (bytesWritten < line.length) throw Object.assign(new Error(`${bytesWritten} of ${line.length} bytes written`), { code: 'ENOSPC' });
        await handle.datasync();
      } finally {
        await handle.close();
      }
      // A new file's name is on disk only once its directory is synced too, whichever process made it.
      if (!this.directorySynced) {
        await syncDirectory(dirname(this.file));
        this.directorySynced = true;
      }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      if (code === 'ENOSPC' || code === 'EDQUOT') throw Object.assign(new StoreFullError('the erasure log', code), { cause: error });
      throw Object.assign(new StoreUnavailableError('the erasure log', `${this.file} cannot be written (${code})`), { cause: error });
    }
  }

  /** Every entry, the latest one per key, in the order of their first line; none when there is no log. Lines that do not parse (a write cut short) are left out. */
  async entries(): Promise<ErasureEntry[]> {
    const byKey = new Map<string, ErasureEntry>();
    if (!existsSync(this.file)) return [];
    const lines = createInterface({ input: createReadStream(this.file, 'utf8'), crlfDelay: Infinity });
    for await (const line of lines) {
      const entry = parsed(line);
      if (entry) byKey.set(entry.key, entry);
    }
    return [...byKey.values()];
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A line's entry. A line another process's write cut short joined (it ended that line just before)
 * still gives the entry it ends with: each entry starts with `{"key":`, which JSON.stringify never
 * writes inside a value (it escapes the quotes).
 */
function parsed(line: string): ErasureEntry | undefined {
  const whole = entryOf(line);
  const at = line.lastIndexOf('{"key":');
  return whole ?? (at > 0 ? entryOf(line.slice(at)) : undefined);
}

function entryOf(text: string): ErasureEntry | undefined {
  try {
    const entry = JSON.parse(text) as Partial<ErasureEntry>;
    return typeof entry.key === 'string' && typeof entry.account === 'string' && typeof entry.at === 'string'
      ? { key: entry.key, account: entry.account, at: entry.at }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Destroys again the keys of the log's erasures that the key store still has (or has no tombstone
 * of): a key store restored from before them. Each is left pending, so the start's finishing of
 * pending erasures (RecordEraser.finishPending) appends its erasure event if the events lack it and
 * scrubs its read models, before the service answers. Returns the entries erased again.
 */
export async function eraseAgain(log: ErasureLog, store: KeyStore): Promise<ErasureEntry[]> {
  const entries = await log.entries();
  const again: ErasureEntry[] = [];
  for (let i = 0; i < entries.length; i += LOOKUP_BATCH) {
    const batch = entries.slice(i, i + LOOKUP_BATCH);
    const found = await store.getMany(batch.map((e) => e.key));
    for (const entry of batch) {
      if (found.get(entry.key) === null) continue; // destroyed: erased, or pending
      await store.destroy(entry.key, entry.account);
      again.push(entry);
    }
  }
  return again;
}
