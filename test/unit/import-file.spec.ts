import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { csvCells, FileRow, formatOf, readRows } from '../../src/cli/import-file';

/** The import's file reader: NDJSON and RFC 4180 CSV, row by row, with the line each row starts on. */
describe('import file reader', () => {
  const dir = mkdtempSync(join(tmpdir(), 'import-file-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const rows = async (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    const out: FileRow[] = [];
    for await (const row of readRows(file, await formatOf(file))) out.push(row);
    return out;
  };

  it('splits CSV cells as RFC 4180 says: quotes, doubled quotes, commas inside quotes, empty cells', () => {
    expect(csvCells('a,b,,d')).toEqual(['a', 'b', '', 'd']);
    expect(csvCells('"a, b","say ""hi""",,"",x')).toEqual(['a, b', 'say "hi"', '', '', 'x']);
  });

  it('reads CSV by its header row, a quoted line break kept, CRLF, a BOM, blank lines skipped, each row at the line it starts on', async () => {
    expect(await rows('a.csv', '\uFEFFid,name,address\r\n1,Ada,"7 Square,\r\nTehran"\r\n\r\n2,"Bo ""B""",\r\n3,only two\r\n')).toEqual([
      { line: 2, values: { id: '1', name: 'Ada', address: '7 Square,\nTehran' } },
      { line: 5, values: { id: '2', name: 'Bo "B"', address: '' } },
      { line: 6, unreadable: 'the row has 2 cells where the header row names 3 columns' },
    ]);
  });

  it('says so when a quoted field is never closed', async () => {
    expect(await rows('b.csv', 'id,name\n1,"open\n2,x\n')).toEqual([{ line: 2, unreadable: 'a quoted field is not closed before the end of the file' }]);
  });

  it('reads NDJSON (by extension or by its first character), one object a line', async () => {
    expect(await formatOf(join(dir, 'a.csv'))).toBe('csv');
    expect(await rows('c.txt', '{"id":"1","tel":21}\n\n[1]\n{oops\n')).toEqual([
      { line: 1, values: { id: '1', tel: 21 } },
      { line: 3, unreadable: 'not a JSON object' },
      { line: 4, unreadable: expect.stringMatching(/^not JSON: /) },
    ]);
  });
});
