import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * The rows of an import file, read as a stream (memory bounded whatever the file's size): NDJSON,
 * one JSON object a line, or CSV with a header row (RFC 4180: quoted fields may hold commas, quotes
 * doubled, line breaks). A row is its values by column name, or what makes it unreadable.
 */
export type FileRow = { line: number; values: Record<string, unknown> } | { line: number; unreadable: string };

export type FileFormat = 'ndjson' | 'csv';

/** By the file's extension (.csv, .ndjson, .jsonl), else by its first character: `{` is NDJSON. */
export async function formatOf(path: string): Promise<FileFormat> {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  const file = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(256), 0, 256, 0);
    return buffer
      .subarray(0, bytesRead)
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .trimStart()
      .startsWith('{')
      ? 'ndjson'
      : 'csv';
  } finally {
    await file.close();
  }
}

/** The file's rows in order; `progress` hears how many of its bytes are read. Blank lines are no rows. */
export async function* readRows(path: string, format: FileFormat, progress?: (bytesRead: number) => void): AsyncGenerator<FileRow> {
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 });
  stream.on('data', () => progress?.(stream.bytesRead));
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let number = 0;
  let header: string[] | undefined;
  /** A CSV record whose quoted field goes on past a line break: its lines so far, and the line it began on. */
  let open: { text: string; line: number } | undefined;
  for await (const raw of lines) {
    number++;
    const text = number === 1 ? raw.replace(/^\uFEFF/, '') : raw;
    if (format === 'ndjson') {
      if (text.trim() !== '') yield jsonRow(number, text);
      continue;
    }
    const record = open ? { text: `${open.text}\n${text}`, line: open.line } : { text, line: number };
    if ((quotes(text) % 2 === 1) !== !!open) {
      open = record;
      continue;
    }
    open = undefined;
    if (record.text.trim() === '') continue;
    const cells = csvCells(record.text);
    if (!header) {
      header = cells.map((c) => c.trim());
      continue;
    }
    if (cells.length !== header.length) {
      yield { line: record.line, unreadable: `the row has ${cells.length} cells where the header row names ${header.length} columns` };
      continue;
    }
    const values: Record<string, unknown> = {};
    header.forEach((name, i) => (values[name] = cells[i]));
    yield { line: record.line, values };
  }
  if (open) yield { line: open.line, unreadable: 'a quoted field is not closed before the end of the file' };
}

function jsonRow(line: number, text: string): FileRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { line, unreadable: `not JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { line, unreadable: 'not a JSON object' };
  return { line, values: value as Record<string, unknown> };
}

/** How many double quotes the text holds: odd, a quoted field goes on past its end. */
function quotes(text: string): number {
  let n = 0;
  for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) n++;
  return n;
}

/** The cells of one CSV record (its quotes balanced): quoted cells unquoted, their doubled quotes made single. */
export function csvCells(text: string): string[] {
  if (!text.includes('"')) return text.split(',');
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let cell = '';
      let from = i + 1;
      for (;;) {
        const quote = text.indexOf('"', from);
        if (quote === -1) {
          cell += text.slice(from);
          i = text.length;
          break;
        }
        cell += text.slice(from, quote);
        if (text[quote + 1] === '"') {
          cell += '"';
          from = quote + 2;
          continue;
        }
        i = quote + 1;
        break;
      }
      // Anything between the closing quote and the comma is kept, as lenient parsers do.
      const comma = text.indexOf(',', i);
      cells.push(cell + text.slice(i, comma === -1 ? text.length : comma));
      if (comma === -1) return cells;
      i = comma + 1;
    } else {
      const comma = text.indexOf(',', i);
      cells.push(text.slice(i, comma === -1 ? text.length : comma));
      if (comma === -1) return cells;
      i = comma + 1;
    }
  }
}
