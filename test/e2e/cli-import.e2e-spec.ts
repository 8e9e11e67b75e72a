import { appendFileSync, createReadStream, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { FIRST_CREATED, writeCustomersFile } from '../../bench/import-file';
import { Database } from '../../src/storage/sqlite-database';
import { runCli, spawnCli } from '../support/cli';
import { describeOnSqlite, describeUnlessWorkers } from '../support/stores';
import { ACCOUNT_IDS, ACCOUNTS, makeDataDir, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

/**
 * Issue 54 item 1: `npm run cli -- import`, run as a process on the embedded store: a generated file
 * of 100,000 customers with refused rows, checked (--dry-run), imported with a kill -9 in the
 * middle, imported again, then read through the service; and profiles, whose slugs are unique.
 */
const ROWS = 100_000;
/** The rows (0-based) the generator spoils, each with a fault of its own. */
const SPOILED = [10, 5_000, 20_000, 50_000, 77_777, 99_999];
const VALID = ROWS - SPOILED.length;
const env = { ACCESS_TOKENS: [...ACCOUNTS].map(([token, account]) => `${token}:${account}`).join(',') };
const report = (stdout: string) => {
  const [, read, created, skipped, refused] = /Rows read: ([\d,]+), (?:created|to create): ([\d,]+), skipped: ([\d,]+), refused: ([\d,]+)/
    .exec(stdout)!
    .map((n) => Number(n.replace(/,/g, '')));
  return { read, created, skipped, refused };
};
/** The customers' events in the store, and their streams: equal when each is in once. */
const stored = (dataDir: string) => {
  const db = new Database(join(dataDir, 'service.sqlite'), { readonly: true });
  try {
    return db
      .prepare<[], { events: number; streams: number }>(
        "SELECT count(*) AS events, count(DISTINCT stream_id) AS streams FROM events WHERE stream_id LIKE 'customer-%'",
      )
      .get()!;
  } finally {
    db.close();
  }
};

/** The rows of the key store (keys.sqlite): a key made is a row. */
const keyRows = (dataDir: string) => {
  const db = new Database(join(dataDir, 'keys.sqlite'), { readonly: true });
  try {
    return db.prepare<[], { n: number }>('SELECT count(*) AS n FROM data_keys').get()!.n;
  } finally {
    db.close();
  }
};
/** What a 256 MiB limit gives the import (config/memory.ts), as it says on stderr. */
const SIZED_256 =
  'Memory: limit 256 MiB (MEMORY_LIMIT); heap limit 120 MiB (--max-old-space-size=96 sized, --max-semi-space-size=8 sized); MALLOC_ARENA_MAX=2; ' +
  'RECORD_CACHE_SIZE=2000; KEY_CACHE_SIZE=2000; REBUILD_ROWIDS=500000; import batches of 2500 rows; SQLite page caches of 8 MiB';

/** The i-th row of the file, as written. */
async function rowOf(file: string, i: number): Promise<Record<string, string | number>> {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(file) })) if (n++ === i) return JSON.parse(line) as Record<string, string | number>;
  throw new Error(`no row ${i}`);
}

describeOnSqlite('CLI import', () =>
  describeUnlessWorkers(
    'on the embedded store',
    'the imports run with the service stopped, the same with WORKERS or not: the 100,000 rows once are enough',
    () => {
      const dataDir = makeDataDir();
      const file = join(dataDir, 'customers.ndjson');
      let spoiled: { line: number; field: string }[];
      const account = ACCOUNT_IDS.a;
      const importCustomers = (...more: string[]) => ['import', 'customers', file, '--account', account, ...more];

      beforeAll(async () => {
        spoiled = await writeCustomersFile(file, ROWS, SPOILED);
        // The store, as the service's first start makes it.
        await (await startTestApp({ dataDir })).close({ keepData: true });
      }, 120_000);
      afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

      it('explains itself, and refuses a command line it cannot run, saying why', async () => {
        const help = await runCli(['import', '--help'], dataDir, env);
        expect(help.code).toBe(0);
        expect(help.stdout).toMatch(/^Usage: npm run cli -- import <profiles\|customers> <file> --account <id> \[--dry-run\]/);
        expect((await runCli(['--help'], dataDir, env)).stdout).toContain('import <profiles|customers> <file>');
        const noAccount = await runCli(['import', 'customers', file], dataDir, env);
        expect(noAccount.code).toBe(2);
        expect(noAccount.stderr).toMatch(/^import needs --account <id>/);
        const unknownKind = await runCli(['import', 'invoices', file, '--account', account], dataDir, env);
        expect([unknownKind.code, unknownKind.stderr.split('\n')[0]]).toEqual([2, 'import takes profiles or customers, not "invoices".']);
        const stranger = await runCli(['import', 'customers', file, '--account', 'nobody'], dataDir, env);
        expect(stranger.code).toBe(1);
        expect(stranger.stderr).toContain('No access token names the account "nobody"');
      });

      it('--dry-run reports every refused row by line and field, and writes nothing', async () => {
        const { code, stdout } = await runCli(importCustomers('--dry-run'), dataDir, env);
        expect(code).toBe(1);
        expect(report(stdout)).toEqual({ read: ROWS, created: VALID, skipped: 0, refused: SPOILED.length });
        for (const { line, field } of spoiled) expect(stdout).toMatch(new RegExp(`^line ${line}: ${field}: `, 'm'));
        // The API's own messages.
        expect(stdout).toContain(`line ${spoiled[0].line}: email: email must be a valid e-mail address of at most 254 characters`);
        expect(stdout).toContain(`line ${spoiled[4].line}: email: at least one of email and mobile must be filled in`);
        expect(stdout).toContain(`line ${spoiled[5].line}: logo: logo is set by the service and cannot be sent`);
        expect(stored(dataDir)).toEqual({ events: 0, streams: 0 });
      }, 120_000);

      it('killed with -9 in the middle and run again, ends with every row in exactly once, the read models and the feed folded; sized to MEMORY_LIMIT', async () => {
        // In a container of 256 MiB: the import restarts itself in place with the heap flags and arenas the limit gives, and its batches are smaller.
        const sized = { ...env, MEMORY_LIMIT: '256m' };
        const first = spawnCli(importCustomers(), dataDir, sized);
        while (stored(dataDir).events < 10_000 && typeof (await Promise.race([first.exited, sleep(50)])) !== 'number');
        const proc = (file: string) => readFileSync(`/proc/${first.process.pid}/${file}`, 'utf8').split('\0');
        expect(proc('cmdline').slice(1, 3)).toEqual(['--max-semi-space-size=8', '--max-old-space-size=96']);
        expect(proc('environ')).toContain('MALLOC_ARENA_MAX=2');
        first.process.kill('SIGKILL');
        expect(await first.exited).toBe('SIGKILL');
        expect(first.stderr().split('\n')).toContain(SIZED_256);
        const before = stored(dataDir);
        expect(before.events).toBeLessThan(VALID);

        const again = await runCli(importCustomers(), dataDir, sized);
        expect(again.stderr.split('\n')).toContain(SIZED_256);
        expect(again.code).toBe(1); // the spoiled rows are refused again
        expect(report(again.stdout)).toEqual({ read: ROWS, created: VALID - before.events, skipped: before.events, refused: SPOILED.length });
        expect(stored(dataDir)).toEqual({ events: VALID, streams: VALID });
        const { projections } = JSON.parse((await runCli(['projections', 'status', '--json'], dataDir)).stdout) as {
          projections: { name: string; lag: number }[];
        };
        expect(projections.map((p) => [p.name, p.lag])).toEqual([
          ['profiles', 0],
          ['customers', 0],
          ['feed', 0],
        ]);
      }, 240_000);

      it('run again, creates nothing twice: the same values are skipped, other values refused; a skipped row makes no key', async () => {
        const keys = keyRows(dataDir);
        const again = await runCli(importCustomers(), dataDir, env);
        expect(report(again.stdout)).toEqual({ read: ROWS, created: 0, skipped: VALID, refused: SPOILED.length });
        expect(keyRows(dataDir)).toBe(keys);
        // One record as a CSV export gives it, once with its values and once with another name.
        const row = await rowOf(file, 3);
        const csv = join(dataDir, 'changed.csv');
        const cells = (r: Record<string, string | number>) =>
          Object.values(r)
            .map((v) => `"${String(v)}"`)
            .join(',');
        writeFileSync(csv, `${Object.keys(row).join(',')}\n${cells(row)}\n${cells({ ...row, name: 'Someone Else' })}\n`);
        const changed = await runCli(['import', 'customers', csv, '--account', account], dataDir, env);
        expect(changed.code).toBe(1);
        expect(report(changed.stdout)).toEqual({ read: 2, created: 0, skipped: 1, refused: 1 });
        expect(changed.stdout).toContain('line 3: name: a record with this id is stored with another value of name');
        expect(stored(dataDir)).toEqual({ events: VALID, streams: VALID });
      }, 240_000);

      describe('read through the service', () => {
        let app: TestApp;
        /** The row of the record erased below, imported again with the file beside the service. */
        let erasedRow: Record<string, string | number>;
        beforeAll(async () => {
          app = await startTestApp({ dataDir });
        }, 60_000);
        afterAll(() => app.close({ keepData: true }));

        it('keeps each record its id and created; its history starts with the import, as-of reads before it answer the record', async () => {
          const row = await rowOf(file, 3);
          const read = await app.http.get(withToken(`customers/${row.id}`));
          expect(read.status).toBe(200);
          expect(read.body.data[0].Customer).toMatchObject({ id: row.id, name: row.name, created: row.created });
          const history = await app.http.get(withToken(`customers/${row.id}/history`));
          expect(history.body.data).toEqual([
            expect.objectContaining({
              event: 'CustomerCreated',
              revision: 0,
              occurred: new Date(Number(row.created) * 1000).toISOString(),
              actor: account,
              imported: { by: userInfo().username, at: expect.stringMatching(/^\d{4}-.*Z$/), file: 'customers.ndjson' },
            }),
          ]);
          expect(Date.parse(history.body.data[0].imported.at)).toBeGreaterThan(Date.now() - 3600_000);
          // Before the import, after its created: the record as it was created.
          const asOf = await app.http.get(withToken(`customers/${row.id}?as_of=${Number(row.created) + 30}`));
          expect([asOf.status, asOf.body.data[0].Customer.name]).toEqual([200, row.name]);
          expect((await app.http.get(withToken(`customers/${row.id}?as_of=${Number(row.created) - 1}`))).status).toBe(404);
        });

        it('erases an imported record as any other: its key destroyed (crypto-shredding), then read as unknown, its history blank', async () => {
          const row = (erasedRow = await rowOf(file, 60_000));
          const erased = await app.http.post(withToken(`customers/${row.id}/erase`));
          expect(erased.status).toBe(200);
          expect((await app.http.get(withToken(`customers/${row.id}`))).status).toBe(404);
          const history = await app.http.get(withToken(`customers/${row.id}/history`));
          expect(history.body.data.map((e: { event: string }) => e.event)).toEqual(['CustomerCreated', 'CustomerErased']);
          expect(Object.values(history.body.data[0].changes as Record<string, unknown>).every((v) => v === null)).toBe(true);
          const keys = new Database(join(dataDir, 'keys.sqlite'), { readonly: true });
          try {
            expect(keys.prepare('SELECT key FROM data_keys WHERE key_id = ?').get(`customer-${row.id}`)).toEqual({ key: null });
          } finally {
            keys.close();
          }
        });

        it('tells each import in the change feed as customer.created, at its created time, with the import', async () => {
          const page = await fetch(`${app.baseUrl}/v1/events?limit=5`, { headers: { authorization: `Bearer ${TOKENS.a}` } });
          const entries = ((await page.json()) as { data: { type: string; time: string; data: { imported?: { file: string } } }[] }).data;
          expect(entries.map((e) => e.type)).toEqual(Array(5).fill('customer.created'));
          expect(entries.every((e) => e.data.imported?.file === 'customers.ndjson')).toBe(true);
          expect(entries.map((e) => Date.parse(e.time) / 1000).every((t) => t >= FIRST_CREATED && t < FIRST_CREATED + ROWS * 60)).toBe(true);
        });

        it('imports customers beside the running service, which folds them as its writes go on: every row read through it as the command ends', async () => {
          // Enough rows for the import to fold as it goes, were no service folding (FoldAlongside): here the service holds the leases and folds.
          const more = join(dataDir, 'more-customers.ndjson');
          await writeCustomersFile(more, 15_000);
          // And the erased record's row, last: its batch's keys are made in the sealing thread, which finds that one destroyed.
          appendFileSync(more, `${JSON.stringify(erasedRow)}\n`);
          const importing = runCli(['import', 'customers', more, '--account', account], dataDir, env);
          const written: { status: number }[] = [];
          for (let i = 0; i < 5; i++) written.push(await app.http.post(withToken('customers')).send({ name: `Beside ${i}`, email: `beside${i}@example.com` }));
          const run = await importing;
          expect([run.code, report(run.stdout)]).toEqual([1, { read: 15_001, created: 15_000, skipped: 0, refused: 1 }]);
          expect(run.stdout).toContain('line 15001: id: id is the id of a record that was erased: it is not imported again');
          expect(written.map((w) => w.status)).toEqual(Array(5).fill(201));
          for (const i of [0, 7_500, 14_999]) {
            const row = await rowOf(more, i);
            const read = await app.http.get(withToken(`customers/${row.id}`));
            expect([read.status, read.body.data?.[0].Customer.email]).toEqual([200, row.email]);
          }
          // Listed by e-mail (the first file has a row of that e-mail too).
          const last = await rowOf(more, 14_998);
          const listed = await app.http.get(withToken(`customers?email=${encodeURIComponent(String(last.email))}`));
          expect((listed.body.data as { Customer: { id: string } }[]).map((d) => d.Customer.id)).toContain(last.id);
        }, 120_000);

        it('imports profiles beside the running service: a slug unique in the file and in the service; CSV quoting; Persian digits', async () => {
          const taken = await app.http.post(withToken('profiles')).send({ name: 'Already here', slug: 'TakenSlug' });
          expect(taken.status).toBe(201);
          const ids = ['a', 'b', 'c', 'd'].map((c) => `${c.repeat(8)}-1111-4111-8111-${c.repeat(12)}`);
          const csv = join(dataDir, 'profiles.csv');
          writeFileSync(
            csv,
            [
              'id,created,name,slug,tel,address',
              `${ids[0]},1600000000,First,free1,021,`,
              `${ids[1]},1600000060,Second,FREE1,,`,
              `${ids[2]},1600000120,Third,takenslug,,`,
              `${ids[3]},1600000180,"Fourth, ""the"" one",,۰۲۱۸۸۷۷۶۶۵۵,"12 Valiasr Street,\nTehran"`,
              '',
            ].join('\r\n'),
          );
          const run = await runCli(['import', 'profiles', csv, '--account', account], dataDir, env);
          expect(run.code).toBe(1);
          expect(report(run.stdout)).toEqual({ read: 4, created: 2, skipped: 0, refused: 2 });
          expect(run.stdout).toContain('line 3: slug: slug is already taken: by the row on line 2');
          expect(run.stdout).toContain('line 4: slug: slug is already taken');
          // The service's read models have them as the command ends.
          const fourth = await app.http.get(withToken(`profiles/${ids[3]}`));
          expect([fourth.status, fourth.body.message]).toEqual([200, undefined]);
          expect(fourth.body.data[0].Profile).toMatchObject({
            name: 'Fourth, "the" one',
            tel: '02188776655',
            address: '12 Valiasr Street,\nTehran',
            created: 1600000180,
          });
          const claim = await app.http.post(withToken('profiles')).send({ name: 'Late', slug: 'Free1' });
          expect(claim.status).toBe(409);

          // Run again, one of the imported profiles changed since through the API: the rows in
          // already are skipped (compared with what the import stored), the others refused as before.
          expect((await app.http.put(withToken(`profiles/${ids[3]}`)).send({ tel: '000123' })).status).toBe(200);
          const again = await runCli(['import', 'profiles', csv, '--account', account], dataDir, env);
          expect(again.code).toBe(1);
          expect(report(again.stdout)).toEqual({ read: 4, created: 0, skipped: 2, refused: 2 });
          expect(again.stdout).toContain('line 3: slug: slug is already taken: by the row on line 2');
          expect(again.stdout).toContain('line 4: slug: slug is already taken');
          expect((await app.http.get(withToken(`profiles/${ids[3]}`))).body.data[0].Profile.tel).toBe('000123');
        });
      });
    },
  ),
);
