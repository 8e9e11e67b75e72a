/**
 * A start over events the read models have not folded yet (a first start over a large store): until
 * they reach the head found at start, reads and lists answer 503 with Retry-After, never a list
 * short of records, and /health/ready says why; then they answer in full.
 */
import { join } from 'node:path';
import type { Response } from 'supertest';
import { seedEvents } from '../../bench/seed-events';
import { describeOnSqlite } from '../support/stores';
import { ACCOUNTS, makeDataDir, startTestApp, TestApp, withToken } from '../support/test-app';

const CATCHING_UP = 'The read models are still catching up with the records stored before the service started; try again shortly.';
const SAVED_WHILE_CATCHING_UP =
  'The change was saved, but the read models are still catching up with the records stored before the service started; read it again shortly.';

describeOnSqlite('reads during the catch-up at start', () => {
  let app: TestApp;
  let customerIds: string[];

  beforeAll(async () => {
    const dataDir = makeDataDir();
    // Past the 10,000 events from which a start catches up by a rebuild, in the background: at some
    // 30,000 events/s, a second or more in which the app serves before its read models are there.
    ({ customerIds } = await seedEvents(join(dataDir, 'service.sqlite'), 40_000));
    // A third account, with no record yet.
    app = await startTestApp({ dataDir, accounts: new Map([...ACCOUNTS, ['token-new', 'account-new']]) });
  }, 120_000);
  afterAll(() => app?.close());

  it('answers 503 with Retry-After until the read models reach the head, then every record', async () => {
    const answers: { list: Response; read: Response; ready: Response }[] = [];
    // The seed's record n belongs to account n % 3 and customers are its odd n: [1] is n = 3, account-a's (token a).
    const someone = customerIds[1];
    // Profiles created meanwhile: an answer's `default` comes from the read model, which may not hold
    // the account's older profiles, or the new one, yet. Each created once, whatever it answers: not
    // "try again". Account-a has older profiles; account-new has none.
    const profiles = (['a', 'new'] as const).map((account) =>
      app.http.post(withToken('profiles', account === 'a' ? undefined : 'token-new')).send({ name: `Made while catching up (${account})` }),
    );
    for (;;) {
      const [list, read, ready] = await Promise.all([
        app.http.get(withToken('customers?limit=100')),
        app.http.get(withToken(`customers/${someone}`)),
        app.http.get('/health/ready'),
      ]);
      answers.push({ list, read, ready });
      if (list.status === 200 && read.status === 200 && ready.status === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const final = answers[answers.length - 1].list;
    const total = Number(final.headers['x-total-count']);
    expect(total).toBeGreaterThan(1000);
    expect(final.body.data).toHaveLength(100);

    const waiting = answers.filter((a) => a.list.status === 503);
    expect(waiting.length).toBeGreaterThan(0); // 40,000 events take longer to fold than a request
    for (const { list, read, ready } of answers) {
      if (list.status === 503) {
        expect(list.headers['retry-after']).toBe('5');
        expect(list.body).toEqual({ success: false, status: 503, error: { code: 'UNAVAILABLE', message: CATCHING_UP } });
      } else {
        // Never a list short of records: once it answers, it answers all of them.
        expect({ status: list.status, total: list.headers['x-total-count'] }).toEqual({ status: 200, total: String(total) });
      }
      expect([200, 503]).toContain(read.status);
      if (read.status === 503) expect(read.body.error.message).toBe(CATCHING_UP);
      if (ready.status === 200) expect(ready.body.problems).toEqual([]);
    }
    for (const [i, created] of (await Promise.all(profiles)).entries()) {
      if (created.status === 503) {
        expect(created.body).toEqual({ success: false, status: 503, error: { code: 'UNAVAILABLE', message: SAVED_WHILE_CATCHING_UP } });
      } else {
        expect({ status: created.status, default: created.body.data.Profile.default }).toEqual({ status: 201, default: i === 0 ? 0 : 1 });
      }
    }
    const listed = await Promise.all([withToken('profiles'), withToken('profiles', 'token-new')].map((path) => app.http.get(path)));
    expect(listed.map((l) => l.body.data[0].Profile)).toMatchObject([
      { name: 'Made while catching up (a)', default: 0 },
      { name: 'Made while catching up (new)', default: 1 },
    ]);
    // Readiness said why while lists waited.
    const problems = waiting.flatMap((a) => a.ready.body.problems as string[]);
    expect(problems).toEqual(expect.arrayContaining([expect.stringMatching(/^projection customers is catching up with the events stored before the start/)]));
  }, 120_000);
});
