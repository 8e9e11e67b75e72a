import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/** Creation times of the generated customers: one a minute from 2020-09-13 on. */
export const FIRST_CREATED = 1_600_000_000;

/** The fields of the i-th generated customer, as an export gives them (its id, its created, the API's request fields). */
export function generatedCustomer(i: number): Record<string, string | number> {
  return {
    id: randomUUID(),
    created: FIRST_CREATED + i * 60,
    name: `Customer ${i}`,
    email: `customer${i}@example.com`,
    mobile: `09${String(i).padStart(9, '0')}`,
    address: `${i} Valiasr Street, Tehran`,
    company: `Company ${i % 1000}`,
    tel: `021${String(i % 100_000_000).padStart(8, '0')}`,
  };
}

/**
 * Writes an NDJSON file of `rows` generated customers, as a CRUD export gives them. `refused`: the
 * row numbers (0-based) that the import must refuse, each with a fault of its own; returns the
 * line of each, by field it names.
 */
export async function writeCustomersFile(file: string, rows: number, refused: number[] = []): Promise<{ line: number; field: string }[]> {
  const out = createWriteStream(file);
  const faults = [
    (c: Record<string, unknown>) => ({ field: 'email', row: { ...c, email: 'not an address' } }),
    (c: Record<string, unknown>) => ({ field: 'mobile', row: { ...c, mobile: '0912' } }),
    (c: Record<string, unknown>) => ({ field: 'id', row: { ...c, id: 'CRM-1234' } }),
    (c: Record<string, unknown>) => ({ field: 'created', row: { ...c, created: 'yesterday' } }),
    (c: Record<string, unknown>) => ({ field: 'email', row: { ...c, email: '', mobile: null } }),
    (c: Record<string, unknown>) => ({ field: 'logo', row: { ...c, logo: 'x.png' } }),
  ];
  const expected: { line: number; field: string }[] = [];
  let chunk = '';
  for (let i = 0; i < rows; i++) {
    let row: Record<string, unknown> = generatedCustomer(i);
    const at = refused.indexOf(i);
    if (at !== -1) {
      const fault = faults[at % faults.length](row);
      row = fault.row;
      expected.push({ line: i + 1, field: fault.field });
    }
    chunk += `${JSON.stringify(row)}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  return expected;
}
