import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import type { NewEvent } from '../../src/event-store/event-store.port';
import type { VerifyReport } from '../../src/projections/verify';
import { SqliteEventStore } from '../../src/event-store/sqlite-event-store';
import { Database, openSqliteDatabase } from '../../src/storage/sqlite-database';
import { ChildService, startChildService } from '../support/child-service';
import { runCli, spawnCli } from '../support/cli';
import { liveTable } from '../support/live-table';
import { describeOnSqlite, describeUnlessWorkers } from '../support/stores';
import { ACCOUNT_IDS, makeDataDir, TOKENS, withToken } from '../support/test-app';

const verifyJson = async (dataDir: string) => {
  const { code, stdout, stderr } = await runCli(['verify', '--json'], dataDir);
  return { code, stderr, report: JSON.parse(stdout) as VerifyReport };
};
const account = (report: VerifyReport, readModel: string, accountId: string = ACCOUNT_IDS.a) =>
  report.accounts.find((a) => a.readModel === readModel && a.accountId === accountId);
/** The scratch directories verify leaves in TMPDIR: none once it has ended. */
const scratchDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith('profiles-customers-verify-'));

// The command on the embedded default, beside the service as a process of its own, which writes meanwhile.
describeOnSqlite('verify', () =>
  describeUnlessWorkers('verify', 'it starts a service process of its own', () => {
    const dataDir = makeDataDir();
    let service: ChildService;
    let http: ReturnType<typeof request>;
    const ids: Record<string, string> = {};
    afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

    const createCustomer = async (name: string, token: string = TOKENS.a) =>
      (
        await http
          .post(withToken('customers', token))
          .send({ name, email: `${randomUUID()}@example.com` })
          .expect(201)
      ).body.data.Customer.id as string;

    beforeAll(async () => {
      service = await startChildService(dataDir, { WORKERS: '1' });
      http = request(service.url);
      ids.ada = await createCustomer('Ada Lovelace');
      ids.bea = await createCustomer('Bea Erased');
      ids.cy = await createCustomer('Cy Deleted');
      ids.dee = await createCustomer('Dee Other', TOKENS.b);
      ids.shop = (await http.post(withToken('profiles')).send({ name: 'Shop' }).expect(201)).body.data.Profile.id;
      await http
        .put(withToken(`customers/${ids.ada}`))
        .send({ company: 'Analytical Engines' })
        .expect(200);
      await http.delete(withToken(`customers/${ids.cy}`)).expect(200);
      await http.post(withToken(`customers/${ids.bea}/erase`)).expect(200);
    });
    afterAll(async () => {
      service.process.kill('SIGTERM');
      await service.exited;
    });

    it('--help describes it', async () => {
      const { code, stdout } = await runCli(['verify', '--help'], dataDir);
      expect(code).toBe(0);
      expect(stdout).toMatch(/^Usage: npm run cli -- verify \[--json\]/);
      expect(stdout).toContain('never a value');
      expect((await runCli(['--help'], dataDir)).stdout).toMatch(/\n {2}verify \[--json\] +Fold the events again/);
    });

    it('agrees after writes, an update, a delete and an erasure: exit 0, a row per read model and account', async () => {
      const { code, stdout, stderr } = await runCli(['verify'], dataDir);
      expect({ code, stderr: stderr.includes('Error') ? stderr : '' }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toMatch(/^READ MODEL +ACCOUNT +ROWS +CHECKSUM +DIFFERING +PARKED$/m);
      expect(stdout).toMatch(new RegExp(`^customers +${ACCOUNT_IDS.a} +3 +[0-9a-f]{16} +0 +0$`, 'm'));
      expect(stdout).toMatch(new RegExp(`^customers +${ACCOUNT_IDS.b} +1 +[0-9a-f]{16} +0 +0$`, 'm'));
      expect(stdout).toMatch(new RegExp(`^profiles +${ACCOUNT_IDS.a} +1 +[0-9a-f]{16} +0 +0$`, 'm'));
      // The feed: an entry per event (3 creates, an update, a delete, an erasure; a profile; another account's create).
      expect(stdout).toMatch(new RegExp(`^feed +${ACCOUNT_IDS.a} +7 +[0-9a-f]{16} +0 +0$`, 'm'));
      expect(stdout).toContain('Every read model agrees with the events.');
      // Progress and the stores on stderr; the scratch copy is gone.
      expect(stderr).toMatch(/folding profiles, customers, feed: /);
      expect(stderr).toMatch(/comparing customers: 4 rows/);
      expect(scratchDirs()).toEqual([]);
    });

    it('--json: the same, with both sides of each account', async () => {
      const { code, report } = await verifyJson(dataDir);
      expect(code).toBe(0);
      expect(report).toMatchObject({ agree: true, differences: [], parked: [], unlisted: 0 });
      const customers = account(report, 'customers')!;
      expect(customers).toMatchObject({ events: { rows: 3 }, stored: { rows: 3 }, differing: 0, parked: 0 });
      expect(customers.events.checksum).toBe(customers.stored.checksum);
      expect(account(report, 'customers', ACCOUNT_IDS.b)!.events.checksum).not.toBe(customers.events.checksum);
    });

    it('agrees while the service writes: a write made during the verify is no difference', async () => {
      const run = spawnCli(['verify', '--json'], dataDir);
      let running = true;
      void run.exited.then(() => (running = false));
      let writes = 0;
      while (running || writes === 0) {
        const id = await createCustomer(`Writer ${writes}`);
        await http
          .put(withToken(`customers/${id}`))
          .send({ company: 'During' })
          .expect(200);
        await http
          .put(withToken(`customers/${ids.ada}`))
          .send({ company: `Engines ${writes}` })
          .expect(200);
        writes++;
      }
      expect(await run.exited).toBe(0);
      expect(JSON.parse(run.stdout())).toMatchObject({ agree: true, differences: [] });
    });

    it('reports a parked stream as parked, not as a difference: exit 0', async () => {
      const poisoned = await createCustomer('Poison Ivy');
      const event: NewEvent = {
        id: randomUUID(),
        type: 'CustomerRenamedByHand',
        data: { name: 'Ivy' },
        metadata: { accountId: ACCOUNT_IDS.a, correlationId: 'by-hand', causationId: 'by-hand', occurredAt: new Date().toISOString() },
      };
      // Appended by hand to the store's file, as an operator's tool would: no code folds its type.
      const store = new SqliteEventStore(openSqliteDatabase(join(dataDir, 'service.sqlite'), { durable: true }));
      await store.appendToStream(`customer-${poisoned}`, [event], 0).finally(() => store.close());
      // Parked once the service's readiness names it (asked over HTTP: a CLI process a try costs a second).
      for (let tries = 0; tries < 500; tries++) {
        const ready = await http.get('/health/ready');
        const customers = (ready.body.projections ?? []).find((p: { name: string }) => p.name === 'customers');
        if (customers?.parked?.streamIds?.includes(`customer-${poisoned}`)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const { code, report } = await verifyJson(dataDir);
      expect(report.differences).toEqual([]);
      expect(code).toBe(0);
      expect(report.parked).toEqual([{ readModel: 'customers', accountId: ACCOUNT_IDS.a, streamId: `customer-${poisoned}`, revision: 1 }]);
      expect(account(report, 'customers')!.parked).toBe(1);
    });

    it('names each record tampered with in the file, and what differs, never a value: exit 1', async () => {
      const db = new Database(join(dataDir, 'service.sqlite'));
      const extra = randomUUID();
      try {
        const customers = liveTable(db, 'customers');
        db.prepare(`UPDATE ${customers} SET fields = json_set(fields, '$.name', 'Mallory Tampered') WHERE id = ?`).run(ids.dee);
        db.prepare(`DELETE FROM ${liveTable(db, 'profiles')} WHERE id = ?`).run(ids.shop);
        db.prepare(
          `INSERT INTO ${customers} SELECT ?, account_id, revision, seq + 1000000, deleted, created, fields, f_email, f_mobile, f_company FROM ${customers} WHERE id = ?`,
        ).run(extra, ids.ada);
      } finally {
        db.close();
      }

      const { code, stdout } = await runCli(['verify'], dataDir);
      expect(code).toBe(1);
      expect(stdout).toMatch(new RegExp(`^customers +${ACCOUNT_IDS.b} +1 +[0-9a-f]{16} \\(read model: [0-9a-f]{16}\\) +1 +0$`, 'm'));
      expect(stdout).toMatch(new RegExp(`^customers +${ACCOUNT_IDS.b} +${ids.dee} +customer-${ids.dee} +differs: fields\\.name$`, 'm'));
      expect(stdout).toMatch(new RegExp(`^profiles +${ACCOUNT_IDS.a} +${ids.shop} +profile-${ids.shop} +missing from the read model$`, 'm'));
      expect(stdout).toMatch(new RegExp(`^customers +${ACCOUNT_IDS.a} +${extra} +customer-${extra} +no event makes this row$`, 'm'));
      expect(stdout).toMatch(/^3 records differ from the events/m);
      // Names, never values: neither the tampered value nor the one the events hold.
      expect(stdout).not.toMatch(/Mallory|Dee|Ada|Shop/);

      const { code: jsonCode, report } = await verifyJson(dataDir);
      expect(jsonCode).toBe(1);
      expect(report.agree).toBe(false);
      expect(report.differences).toEqual(
        expect.arrayContaining([
          { readModel: 'customers', accountId: ACCOUNT_IDS.b, id: ids.dee, streamId: `customer-${ids.dee}`, problem: 'differs', fields: ['fields.name'] },
          { readModel: 'profiles', accountId: ACCOUNT_IDS.a, id: ids.shop, streamId: `profile-${ids.shop}`, problem: 'missing', fields: [] },
          { readModel: 'customers', accountId: ACCOUNT_IDS.a, id: extra, streamId: `customer-${extra}`, problem: 'extra', fields: [] },
        ]),
      );
      expect(report.differences).toHaveLength(3);
      expect(account(report, 'profiles')).toMatchObject({ events: { rows: 1 }, stored: { rows: 0 }, differing: 1 });

      // A rebuild puts them right.
      expect((await runCli(['projections', 'rebuild', 'all', '--park', '--grace-seconds', '0'], dataDir)).code).toBe(0);
      expect((await verifyJson(dataDir)).code).toBe(0);
    });
  }),
);
