import { randomUUID } from 'node:crypto';
import { RowidTable } from '../../src/read-store/rowid-table';

describe("RowidTable (a rebuild's rowids by document id)", () => {
  it('finds every id it was given, UUIDs packed and others beside them, through its growth', () => {
    const table = new RowidTable();
    const ids = Array.from({ length: 20_000 }, () => randomUUID());
    ids.forEach((id, i) => table.set(id, i + 1));
    const others = ['c1', 'ABCDEF01-2345-6789-ABCD-EF0123456789', `${ids[0].slice(0, 35)}g`, 'x'.repeat(36)];
    others.forEach((id, i) => table.set(id, 100_000 + i));
    expect(table.size).toBe(ids.length + others.length);
    ids.forEach((id, i) => expect(table.get(id)).toBe(i + 1));
    others.forEach((id, i) => expect(table.get(id)).toBe(100_000 + i));
    // The upper-case form of a packed id is another id, not the same one.
    expect(table.get(ids[1].toUpperCase())).toBeUndefined();
    expect(table.get(randomUUID())).toBeUndefined();
  });

  it("tells decimal ids (the change feed's) apart from the other forms of their number, and finds them through growth", () => {
    const table = new RowidTable();
    for (let n = 0; n < 30_000; n++) table.set(String(n), n + 1);
    table.set(String(2 ** 40 + 3), 7);
    const others = ['007', '-1', '1.5', '1e3', '1234567890123456', ' 1'];
    others.forEach((id, i) => table.set(id, 100_000 + i));
    expect(table.size).toBe(30_001 + others.length);
    for (let n = 0; n < 30_000; n++) expect(table.get(String(n))).toBe(n + 1);
    expect(table.get(String(2 ** 40 + 3))).toBe(7);
    others.forEach((id, i) => expect(table.get(id)).toBe(100_000 + i));
    expect(table.get('30000')).toBeUndefined();
    expect(table.get('')).toBeUndefined();
    expect(table.bytes).toBeLessThanOrEqual(30_001 * 96);
  });

  it('adds an id it lacks and answers the rowid of one it has, in each of its forms', () => {
    const table = new RowidTable();
    const ids = [randomUUID(), '12', '5', '40', 'other'];
    ids.forEach((id, i) => expect(table.add(id, i + 1)).toBeUndefined());
    ids.forEach((id, i) => expect(table.add(id, 100 + i)).toBe(i + 1));
    ids.forEach((id, i) => expect(table.get(id)).toBe(i + 1));
    expect(table.size).toBe(ids.length);
  });

  it('finds decimal ids given out of order among those given in order, and overwrites either', () => {
    const table = new RowidTable();
    for (let n = 10; n < 20_000; n += 2) table.set(String(n), n);
    // Below the last one given: not in order, kept apart.
    for (let n = 11; n < 20_000; n += 2) table.set(String(n), n);
    table.set('3', 3);
    for (let n = 10; n < 20_000; n++) expect(table.get(String(n))).toBe(n);
    expect(table.get('3')).toBe(3);
    expect(table.get('4')).toBeUndefined();
    expect(table.get('20001')).toBeUndefined();
    table.set('12', 7);
    table.set('13', 8);
    expect([table.get('12'), table.get('13')]).toEqual([7, 8]);
    expect(table.size).toBe(19_991);
  });

  it('overwrites an id set again without counting it twice', () => {
    const table = new RowidTable();
    const id = randomUUID();
    table.set(id, 1);
    table.set(id, 7);
    expect(table.size).toBe(1);
    expect(table.get(id)).toBe(7);
  });

  it('holds its entries outside the heap, in at most 96 bytes each once past its first size', () => {
    const table = new RowidTable();
    for (let i = 1; i <= 50_000; i++) table.set(randomUUID(), i);
    expect(table.bytes).toBeLessThanOrEqual(50_000 * 96);
  });
});
