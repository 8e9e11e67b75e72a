import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { runCli, spawnCli, CliRun } from '../support/cli';
import { makeDataDir, startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

type Entry = { id: string; type: string; subject: string; data: { revision: number; changes: Record<string, { from: string; to: string } | null> } };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What the CLI printed on stdout so far, one entry a line. */
const entries = (run: CliRun) =>
  run
    .stdout()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Entry);
async function untilEntries(run: CliRun, count: number): Promise<Entry[]> {
  for (let i = 0; i < 400 && entries(run).length < count; i++) await sleep(50);
  expect(entries(run).length).toBe(count);
  return entries(run);
}

/** `events tail --url`: the CLI following the change feed of a running service, as real processes. */
describe('events tail --url', () => {
  let t: TestApp;
  // No store here: the CLI must not need one to follow a service.
  const dir = makeDataDir();
  beforeAll(async () => (t = await startTestApp()));
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the account’s entries from the beginning, then each change as it is stored, and says where to resume', async () => {
    const ada = (await t.http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@tail.example' }).expect(201)).body.data.Customer.id;
    await t.http.post(withToken('customers', TOKENS.b)).send({ name: 'Other', email: 'other@tail.example' }).expect(201);
    const tail = spawnCli(['events', 'tail', '--url', t.baseUrl, '--token', TOKENS.a], dir);
    await tail.waitForStderr(new RegExp(`^Following the change feed of ${t.baseUrl} from the beginning \\(Ctrl-C to stop\\)\\n`));
    expect((await untilEntries(tail, 1)).map((e) => [e.type, e.subject])).toEqual([['customer.created', ada]]);

    const shop = (await t.http.post(withToken('profiles')).send({ name: 'Shop' }).expect(201)).body.data.Profile.id;
    await t.http
      .put(withToken(`customers/${ada}`))
      .send({ name: 'Ada L' })
      .expect(200);
    // Printed before the erasure, so with its values: as the service served it then.
    await untilEntries(tail, 3);
    await t.http.post(withToken(`customers/${ada}/erase`)).expect(200);
    const told = await untilEntries(tail, 4);
    expect(told.map((e) => [e.type, e.subject, e.data.revision])).toEqual([
      ['customer.created', ada, 0],
      ['profile.created', shop, 0],
      ['customer.updated', ada, 1],
      ['customer.erased', ada, 2],
    ]);
    expect(told[2].data.changes).toEqual({ name: { from: 'Ada', to: 'Ada L' } });
    expect(told.every((e) => /^[A-Za-z0-9_-]{32}$/.test(e.id))).toBe(true);

    tail.process.kill('SIGINT');
    expect(await tail.exited).toBe(0);
    expect(tail.stderr()).toMatch(new RegExp(`\\nStopped\\. Resume with --after ${told[3].id}\\n$`));

    // Resumed by cursor: only what came after it.
    const resumed = spawnCli(['events', 'tail', '--url', t.baseUrl, '--after', told[1].id], dir, { ACCESS_TOKEN: TOKENS.a });
    await resumed.waitForStderr(new RegExp(`^Following the change feed of ${t.baseUrl} after ${told[1].id} `));
    const again = await untilEntries(resumed, 2);
    expect(again.map((e) => e.id)).toEqual([told[2].id, told[3].id]);
    // Earlier entries of an erased record come with every value null now.
    expect(again[0].data.changes).toEqual({ name: null });
    const bob = (await t.http.post(withToken('customers')).send({ name: 'Bob', mobile: '09121234567' }).expect(201)).body.data.Customer.id;
    expect((await untilEntries(resumed, 3))[2]).toMatchObject({ type: 'customer.created', subject: bob });
    resumed.process.kill('SIGTERM');
    expect(await resumed.exited).toBe(0);
  });

  it('ends with exit 1, in one line, when the service refuses the token or the cursor', async () => {
    const badToken = await runCli(['events', 'tail', '--url', t.baseUrl, '--token', 'no-such-token'], dir);
    expect(badToken).toEqual({ code: 1, stdout: '', stderr: expect.stringMatching(/\nThe service refused the feed \(401\): access_token is invalid\n$/) });
    const cursor = (await t.http.get(withToken('events?limit=1', TOKENS.b)).expect(200)).headers['x-next-cursor'];
    const foreign = await runCli(['events', 'tail', '--url', t.baseUrl, '--token', TOKENS.a, '--after', cursor], dir);
    expect(foreign).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/\nThe service refused the feed \(400\): --after: after must be a cursor the feed gave this account .*\n$/),
    });
  });

  it('asks again while the service cannot be reached, until Ctrl-C', async () => {
    // A port nothing listens on: taken, then freed.
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const tail = spawnCli(['events', 'tail', '--url', `http://127.0.0.1:${port}`, '--token', TOKENS.a], dir);
    await tail.waitForStderr(/The feed could not be read \(ECONNREFUSED\); trying again in [\d.]+s\n[^]*The feed could not be read/);
    tail.process.kill('SIGINT');
    expect(await tail.exited).toBe(0);
    expect(tail.stdout()).toBe('');
    expect(tail.stderr()).toMatch(/Stopped before any entry\.\n$/);
  });

  it.each([
    [['--url', 'http://localhost:3000'], /^--url needs an access token: --token <token>, or the ACCESS_TOKEN environment variable\./],
    [['--url', 'localhost:3000', '--token', 't'], /^--url must be the service's http:\/\/ or https:\/\/ address; got "localhost:3000"\./],
    [['--after', 'AotxzCRme-rkfmxi--XJ0Y24RI1ifuxW'], /^--after goes with --url\./],
    // A cursor may begin with "-": still the value of --after, not an option.
    [['--after', '-nxqfVEwkfsauHUq5TAmfV8Dn-1rrBea'], /^--after goes with --url\./],
    [['--url', 'http://localhost:3000', '--token', 't', '--stream', 'customer-x'], /^--stream tails the store: not with --url/],
  ])('events tail %j is a usage error: exit 2, with its usage', async (args, message) => {
    const { code, stdout, stderr } = await runCli(['events', 'tail', ...args], dir);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(message);
    expect(stderr).toContain('Usage: npm run cli -- events tail [--stream <id>]\n       npm run cli -- events tail --url <address>');
  });
});
