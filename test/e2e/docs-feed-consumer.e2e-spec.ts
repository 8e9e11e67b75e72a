import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, TestApp, TOKENS, withToken } from '../support/test-app';

/** The consumer's code: the first ```js block after `### A complete consumer` in docs/api.md, as printed there. */
function consumerCode(): string {
  const text = readFileSync(join(__dirname, '..', '..', 'docs', 'api.md'), 'utf8');
  const section = text.slice(text.indexOf('\n### A complete consumer\n'));
  const code = /^```js\n([^]*?)^```$/m.exec(section)?.[1];
  if (!code) throw new Error('docs/api.md has no ```js block after "### A complete consumer"');
  return code;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Fields = Record<string, string>;
type Copy = Record<'customers' | 'profiles', Record<string, Fields>>;

/**
 * The consumer of docs/api.md ("Change feed"), run as printed, as a real process against a real
 * service: killed with SIGKILL twice while writers create, update, delete and erase, and started
 * again each time, it ends with a copy equal to the service's lists, and nothing of erased records.
 */
describe('the change feed consumer in docs/api.md', () => {
  let t: TestApp;
  let dir: string;
  const running = new Set<ChildProcess>();
  beforeAll(async () => {
    t = await startTestApp();
    dir = mkdtempSync(join(tmpdir(), 'pcs-feed-consumer-'));
    writeFileSync(join(dir, 'feed-consumer.mjs'), consumerCode());
  });
  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The consumer as its page says to run it; `output()` is what it printed. */
  function startConsumer() {
    const child = spawn(process.execPath, ['feed-consumer.mjs'], {
      cwd: dir,
      env: { PATH: process.env.PATH, SERVICE_URL: t.baseUrl, ACCESS_TOKEN: TOKENS.a, STATE_DIR: 'feed-state' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | string>((resolve) =>
      child.on('close', (code, signal) => {
        running.delete(child);
        resolve(code ?? signal!);
      }),
    );
    const until = async (pattern: RegExp) => {
      for (let i = 0; i < 600 && !pattern.test(output); i++) await sleep(50);
      expect(output).toMatch(pattern);
    };
    return { child, exited, output: () => output, until };
  }

  /** Every record a list of the account shows, by id, page by page. */
  async function listAll(collection: 'customers' | 'profiles', token: string = TOKENS.a): Promise<Record<string, Fields>> {
    const records: Record<string, Fields> = {};
    let after: string | undefined;
    do {
      const res = await t.http.get(withToken(`${collection}?limit=100${after ? `&after=${after}` : ''}`, token)).expect(200);
      for (const wrapped of res.body.data as Record<string, Fields>[]) {
        const record = Object.values(wrapped)[0];
        records[record.id] = record;
      }
      after = res.headers['x-next-cursor'];
    } while (after);
    return records;
  }

  /** The feed's cursor after its last entry, now. */
  async function endOfFeed(): Promise<string> {
    let cursor = '';
    for (;;) {
      const res = await t.http.get(withToken(`events?limit=1000${cursor ? `&after=${cursor}` : ''}`)).expect(200);
      cursor = res.headers['x-next-cursor'];
      if (res.body.data.length < 1000) return cursor;
    }
  }

  it('ends, through SIGKILLs and restarts, with a copy equal to the lists and nothing of erased records', async () => {
    const erased: { collection: string; id: string; secret: string }[] = [];
    let n = 0;
    const created: { collection: 'customers' | 'profiles'; id: string }[] = [];
    const unique = () => `${++n}-${Math.random().toString(36).slice(2, 8)}`;
    const create = async (collection: 'customers' | 'profiles', token: string = TOKENS.a) => {
      const tag = unique();
      const body = collection === 'customers' ? { name: `Customer ${tag}`, email: `c${tag}@feed.example`, postal_code: '01234' } : { name: `Shop ${tag}` };
      const res = await t.http.post(withToken(collection, token)).send(body).expect(201);
      const id = (Object.values(res.body.data)[0] as Fields).id;
      if (token === TOKENS.a) created.push({ collection, id });
      return { id, tag };
    };

    /** A round of writes by several writers at once: creates, updates, a delete and an erasure of records made earlier. */
    const round = async (i: number) => {
      await Promise.all([
        create('customers'),
        create('profiles'),
        create('customers', TOKENS.b), // another account's: never in A's copy
        (async () => {
          const live = created.filter((c) => !erased.some((e) => e.id === c.id));
          const target = live[(i * 7) % Math.max(1, live.length)];
          if (!target) return;
          const res = await t.http.put(withToken(`${target.collection}/${target.id}`)).send({ name: `Renamed ${unique()}`, address: `Street ${i}` });
          expect([200, 404]).toContain(res.status); // 404: deleted by an earlier round
        })(),
      ]);
      if (i % 3 === 2) {
        const target = created[(i * 5) % created.length];
        const res = await t.http.delete(withToken(`${target.collection}/${target.id}`));
        expect([200, 404]).toContain(res.status);
      }
      if (i % 4 === 3) {
        // A record the consumer has most likely read already, its values in its copy: the erasure must remove them.
        const { id, tag } = await create('customers');
        await t.http
          .put(withToken(`customers/${id}`))
          .send({ company: `Company ${tag}` })
          .expect(200);
        await sleep(150);
        await t.http.post(withToken(`customers/${id}/erase`)).expect(200);
        erased.push({ collection: 'customers', id, secret: `c${tag}@feed.example` });
      }
    };

    let consumer = startConsumer();
    let i = 0;
    for (; i < 10; i++) await round(i);
    await consumer.until(/Applied \d+ changes/);
    for (; i < 16; i++) await round(i);
    consumer.child.kill('SIGKILL');
    expect(await consumer.exited).toBe('SIGKILL');
    // Written while it is down: the next run reads them from its cursor.
    for (; i < 24; i++) await round(i);
    consumer = startConsumer();
    await consumer.until(/Applied \d+ changes/);
    const killedAgain = (async () => {
      await sleep(120);
      consumer.child.kill('SIGKILL');
      return consumer.exited;
    })();
    for (; i < 32; i++) await round(i);
    expect(await killedAgain).toBe('SIGKILL');
    consumer = startConsumer();
    for (; i < 40; i++) await round(i);

    // Caught up: its cursor file holds the feed's end.
    const end = await endOfFeed();
    const cursorFile = join(dir, 'feed-state', 'cursor');
    for (let wait = 0; wait < 600 && !(existsSync(cursorFile) && readFileSync(cursorFile, 'utf8') === end); wait++) await sleep(50);
    expect(readFileSync(cursorFile, 'utf8')).toBe(end);
    consumer.child.kill('SIGTERM');
    expect(await consumer.exited).toBe(0);
    expect(consumer.output()).toMatch(/Stopped; the next run goes on from the cursor file\n$/);

    // Each run went on from its cursor: the last one applied a part of the feed, not all of it again.
    const applied = (output: string) => [...output.matchAll(/Applied (\d+) changes/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    const total = (await t.http.get(withToken('events?limit=1000')).expect(200)).body.data.length;
    expect(applied(consumer.output())).toBeGreaterThan(0);
    expect(applied(consumer.output())).toBeLessThan(total / 2);

    const text = readFileSync(join(dir, 'feed-state', 'records.json'), 'utf8');
    const copy = JSON.parse(text) as Copy;
    for (const collection of ['customers', 'profiles'] as const) {
      const listed = await listAll(collection);
      expect(Object.keys(copy[collection]).sort()).toEqual(Object.keys(listed).sort());
      // Each field a list shows, as it shows it: the copy holds the fields writes set ("" when never set).
      for (const [id, record] of Object.entries(listed)) {
        const shown = Object.fromEntries(
          Object.keys(record).flatMap((f) => (['id', 'created', 'default', 'logo', 'signature'].includes(f) ? [] : [[f, record[f]]])),
        );
        const kept = Object.fromEntries(Object.keys(shown).map((f) => [f, copy[collection][id][f] ?? '']));
        expect({ id, fields: kept }).toEqual({ id, fields: shown });
      }
      // The fields lists leave out came too, as created.
      if (collection === 'customers') expect(Object.values(copy.customers).every((c) => c.postal_code === '01234')).toBe(true);
    }
    expect(Object.keys(copy.customers).length).toBeGreaterThan(10);
    expect(Object.keys(copy.profiles).length).toBeGreaterThan(10);
    expect(erased.length).toBe(10);
    for (const { id, secret } of erased) {
      expect(text).not.toContain(id);
      expect(text).not.toContain(secret);
    }
    const others = await listAll('customers', TOKENS.b);
    expect(Object.keys(others).filter((id) => text.includes(id))).toEqual([]);
  }, 180_000);
});
