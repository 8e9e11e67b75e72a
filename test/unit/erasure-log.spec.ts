import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ErasureLog } from '../../src/key-store/erasure-log';
import { makeDataDir } from '../support/test-app';

/** The erasure log keeps every whole line, whatever a crash or a full disk left of another. */
describe('ErasureLog', () => {
  const dir = makeDataDir();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const entry = (n: number) => ({ key: `customer-${n}`, account: 'acme', at: `2026-11-29T18:00:0${n}.000Z` });

  it('appends one JSON line per erasure, readable back, the latest per key', async () => {
    const log = new ErasureLog(join(dir, 'whole', 'erasures.ndjson'));
    expect(await log.entries()).toEqual([]);
    await log.append(entry(1));
    await log.append(entry(2));
    const again = { ...entry(1), at: '2026-11-29T18:00:09.000Z' };
    await log.append(again);
    expect(readFileSync(log.file, 'utf8')).toBe([entry(1), entry(2), again].map((e) => `${JSON.stringify(e)}\n`).join(''));
    expect(await log.entries()).toEqual([again, entry(2)]);
  });

  it('ends a line a crash or a full disk cut short before the next, so that it is not lost with it', async () => {
    const log = new ErasureLog(join(dir, 'cut', 'erasures.ndjson'));
    await log.append(entry(1));
    const whole = JSON.stringify(entry(2));
    appendFileSync(log.file, whole.slice(0, 30));
    await log.append(entry(3));
    expect(readFileSync(log.file, 'utf8')).toBe(`${JSON.stringify(entry(1))}\n${whole.slice(0, 30)}\n${JSON.stringify(entry(3))}\n`);
    expect(await log.entries()).toEqual([entry(1), entry(3)]);
  });

  it('reads an entry whose line joined one cut short (another process wrote it between the look at the end and the write)', async () => {
    const log = new ErasureLog(join(dir, 'joined', 'erasures.ndjson'));
    await log.append(entry(1));
    appendFileSync(log.file, `${JSON.stringify(entry(2)).slice(0, 30)}${JSON.stringify(entry(3))}\n`);
    await log.append(entry(4));
    expect(await log.entries()).toEqual([entry(1), entry(3), entry(4)]);
  });
});
