/**
 * The change feed across what interrupts it (issue 35, "Nothing missed, nothing out of order"): a
 * kill -9 of the service while a streaming and a long-polling consumer are connected and writers
 * write; a rebuild of the read models (the feed's index among them) beside the running service; the
 * service's restart. The service is the built one as a real process (WORKERS=2 in that project).
 */
import { randomInt } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { ChildService, startChildService } from '../support/child-service';
import { runCli } from '../support/cli';
import { FeedEntry, FeedStream, openFeedStream, readFeed, readPage } from '../support/feed-client';
import { jsonRequest, rawRequest } from '../support/raw-http';
import { describeOnSqlite, liveStoreEnv } from '../support/stores';
import { makeDataDir, TOKENS } from '../support/test-app';

const TIMEOUT_MS = 180_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retries `read` while the service answers 503 (its feed's index still catching up after a start) or cannot be reached. */
async function whenServed<T extends { status: number }>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    const res = await read().catch((error: unknown) => {
      if (i > 300) throw error;
      return undefined;
    });
    if (res && (res.status !== 503 || i > 300)) return res;
    await sleep(50);
  }
}

async function stop(service: ChildService): Promise<void> {
  if (service.process.exitCode === null && service.process.signalCode === null) service.process.kill('SIGTERM');
  await service.exited;
}

/** The name an entry set, where it set one: each write of these tests sets a name of its own. */
const nameOf = (entry: FeedEntry) => {
  const change = entry.data.changes.name;
  return change ? change.to : undefined;
};

describeOnSqlite('the change feed through a kill -9 of the service', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it(
    'loses nothing for a streaming and a long-polling consumer: resumed from their last cursor, they hold every acknowledged write, once, in order',
    async () => {
      const env = { FEED_HEARTBEAT_MS: '300' };
      const first = await startChildService(dataDir, env);
      const agent = new Agent({ keepAlive: true });
      const acknowledged: string[] = [];
      let stopped = false;

      /** Creates customers and renames them, each write with a name of its own, until the service dies. */
      const writer = async (w: number) => {
        for (let n = 0; !stopped; n++) {
          try {
            const created = await rawRequest(
              first.url,
              jsonRequest('POST', '/v1/customers', TOKENS.a, { name: `w${w}-c${n}`, email: `w${w}c${n}@crash.example` }),
              agent,
            );
            if (created.status !== 201) throw new Error(`POST answered ${created.status}`);
            acknowledged.push(`w${w}-c${n}`);
            const { id } = (JSON.parse(created.text) as { data: { Customer: { id: string } } }).data.Customer;
            for (let u = 0; u < 2; u++) {
              const renamed = await rawRequest(first.url, jsonRequest('PUT', `/v1/customers/${id}`, TOKENS.a, { name: `w${w}-c${n}-u${u}` }), agent);
              if (renamed.status !== 200) throw new Error(`PUT answered ${renamed.status}`);
              acknowledged.push(`w${w}-c${n}-u${u}`);
            }
          } catch (error) {
            if (!stopped) throw error; // only the dead service may fail a request
            return;
          }
        }
      };

      // The consumers, each with what it saves: the entries it applied and its cursor.
      const streamed: FeedEntry[] = [];
      const polled: FeedEntry[] = [];
      let pollCursor: string | undefined;
      const stream: FeedStream = await openFeedStream(first.url, TOKENS.a, { onEntry: (entry) => streamed.push(entry) });
      expect(stream.status).toBe(200);
      const poller = (async () => {
        for (;;) {
          const page = await readPage(first.url, TOKENS.a, { after: pollCursor, limit: randomInt(1, 20), wait: 5 });
          expect(page.status).toBe(200);
          polled.push(...page.entries);
          pollCursor = page.cursor;
        }
      })().catch(() => undefined); // ends when the service dies under it

      const writing = Promise.all([0, 1, 2, 3].map(writer));
      const killAfter = randomInt(60, 150);
      while (acknowledged.length < killAfter) await sleep(5);
      await sleep(randomInt(0, 30));
      first.crash();
      stopped = true;
      expect(await first.exited).toBeNull();
      await writing;
      await poller;
      await stream.ended;
      agent.destroy();
      const ackedBeforeKill = [...acknowledged];
      // The consumers were following while the service died: both had entries.
      expect(streamed.length).toBeGreaterThan(0);
      expect(polled.length).toBeGreaterThan(0);

      const second = await startChildService(dataDir, env);
      try {
        // Resumed: the stream from Last-Event-ID, the poller from its cursor, each until it has the whole feed.
        const all = (await whenServed(() => readFeed(second.url, TOKENS.a).then((r) => ({ ...r, status: 200 })))).entries;
        const lastStreamed = streamed[streamed.length - 1].id;
        const resumed = await whenServed(() => openFeedStream(second.url, TOKENS.a, { lastEventId: lastStreamed, onEntry: (entry) => streamed.push(entry) }));
        expect(resumed.status).toBe(200);
        expect(await resumed.until(() => streamed.length >= all.length, 30_000)).toBe(true);
        resumed.close();
        for (;;) {
          const page = await whenServed(() => readPage(second.url, TOKENS.a, { after: pollCursor, limit: 7 }));
          expect(page.status).toBe(200);
          polled.push(...page.entries);
          pollCursor = page.cursor;
          if (page.entries.length === 0) break;
        }

        // Each consumer's entries, across the kill, are the feed: every entry once, in the stored order.
        expect(streamed.map((e) => e.id)).toEqual(all.map((e) => e.id));
        expect(polled.map((e) => e.id)).toEqual(all.map((e) => e.id));
        // And every write acknowledged before the kill is among them.
        const names = new Set(all.map(nameOf));
        expect(ackedBeforeKill.filter((name) => !names.has(name))).toEqual([]);
        expect(ackedBeforeKill.length).toBeGreaterThanOrEqual(killAfter);
      } finally {
        await stop(second);
      }
    },
    TIMEOUT_MS,
  );
});

describeOnSqlite('feed cursors across a rebuild of the read models and a restart', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it(
    'resumes a cursor taken before exactly after its entry',
    async () => {
      let service = await startChildService(dataDir);
      const write = async (n: number) => {
        const res = await rawRequest(service.url, jsonRequest('POST', '/v1/customers', TOKENS.a, { name: `r${n}`, email: `r${n}@rebuild.example` }));
        expect(res.status).toBe(201);
        return (JSON.parse(res.text) as { data: { Customer: { id: string } } }).data.Customer.id;
      };
      try {
        for (let n = 0; n < 30; n++) await write(n);
        const before = await readFeed(service.url, TOKENS.a);
        expect(before.entries).toHaveLength(30);
        // Cursors of several kinds: an entry's id mid-feed, the first entry's, a page's X-Next-Cursor at the end.
        const taken = [before.entries[0].id, before.entries[12].id, before.cursor];
        const rest = (cursor: string, entries: FeedEntry[]) => {
          const at = entries.findIndex((e) => e.id === cursor);
          return entries.slice(cursor === before.cursor ? before.entries.length : at + 1).map((e) => e.id);
        };
        const expectResumes = async (entries: FeedEntry[]) => {
          for (const cursor of taken) {
            const { entries: after } = await whenServed(() => readFeed(service.url, TOKENS.a, cursor, 7).then((r) => ({ ...r, status: 200 })));
            expect(after.map((e) => e.id)).toEqual(rest(cursor, entries));
          }
        };

        // A rebuild of every read model beside the running service; writes after it.
        const generation = async () =>
          (
            JSON.parse((await runCli(['projections', 'status', '--json'], dataDir, liveStoreEnv())).stdout) as {
              projections: { name: string; generation: number }[];
            }
          ).projections.find((p) => p.name === 'feed')!.generation;
        const feedGeneration = await generation();
        const rebuild = await runCli(['projections', 'rebuild', 'all', '--grace-seconds', '0'], dataDir, liveStoreEnv());
        expect(rebuild.code).toBe(0);
        expect(await generation()).toBe(feedGeneration + 1);
        for (let n = 30; n < 35; n++) await write(n);
        const rebuilt = await readFeed(service.url, TOKENS.a);
        expect(rebuilt.entries.slice(0, 30)).toEqual(before.entries);
        expect(rebuilt.entries).toHaveLength(35);
        await expectResumes(rebuilt.entries);

        // A restart: the cursors still resume after their entries, and an SSE consumer after its Last-Event-ID.
        await stop(service);
        service = await startChildService(dataDir);
        await expectResumes(rebuilt.entries);
        const stream = await whenServed(() => openFeedStream(service.url, TOKENS.a, { lastEventId: taken[1] }));
        expect(stream.status).toBe(200);
        expect(await stream.until(() => stream.entries.length >= 35 - 13)).toBe(true);
        expect(stream.entries.map((e) => e.id)).toEqual(rebuilt.entries.slice(13).map((e) => e.id));
        stream.close();

        // A rebuild while the service is stopped, then a start: the same.
        await stop(service);
        expect((await runCli(['projections', 'rebuild', 'feed', '--grace-seconds', '0'], dataDir, liveStoreEnv())).code).toBe(0);
        service = await startChildService(dataDir);
        await expectResumes(rebuilt.entries);
      } finally {
        await stop(service);
      }
    },
    TIMEOUT_MS,
  );
});
