/**
 * The change feed on several instances sharing one store configuration (issue 35: "within 1 s
 * across instances"): a write on one instance reaches consumers waiting on another, long-polling and
 * streaming, whichever instance folds the feed's index. Two services side by side on one data
 * directory, as test/e2e/several-instances.e2e-spec.ts starts them.
 */
import { rmSync } from 'node:fs';
import { ChildService, startChildService } from '../support/child-service';
import { FeedEntry, openFeedStream, readFeed, readPage } from '../support/feed-client';
import { jsonRequest, rawRequest } from '../support/raw-http';
import { describeUnlessWorkers } from '../support/stores';
import { makeDataDir, TOKENS } from '../support/test-app';

const WRITES = 10;

async function stop(...services: ChildService[]): Promise<void> {
  for (const s of services) if (s.process.exitCode === null && s.process.signalCode === null) s.process.kill('SIGTERM');
  await Promise.all(services.map((s) => s.exited));
}

describeUnlessWorkers('the change feed across instances', 'it starts instances of its own, the same in either mode', () => {
  const dataDir = makeDataDir();
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('brings a write on one instance to consumers long-polling and streaming on the other within about a second', async () => {
    const a = await startChildService(dataDir, { FEED_HEARTBEAT_MS: '1000' });
    const b = await startChildService(dataDir, { FEED_HEARTBEAT_MS: '1000' });
    try {
      const folding = async (s: ChildService) => {
        const ready = JSON.parse((await rawRequest(s.url, { method: 'GET', path: '/health/ready' })).text) as {
          projections: { name: string; folding: boolean }[];
        };
        return ready.projections.find((p) => p.name === 'feed')!.folding;
      };
      // One of the two folds the feed's index; the other learns of it from the store.
      expect([await folding(a), await folding(b)].filter(Boolean)).toHaveLength(1);

      const start = (await readFeed(a.url, TOKENS.a)).cursor;
      /** When each stream received each record's entry. */
      const arrived = [new Map<string, number>(), new Map<string, number>()];
      const streams = await Promise.all(
        [a, b].map((s, k) => openFeedStream(s.url, TOKENS.a, { after: start, onEntry: (entry) => arrived[k].set(entry.subject, Date.now()) })),
      );
      /** Per write: ms from its acknowledgement to its entry, per consumer. */
      const latencies: number[] = [];
      // One cursor for both: a cursor from one instance is good on the other.
      let cursor = start;
      for (let n = 0; n < WRITES; n++) {
        const [writer, reader] = n % 2 ? [a, b] : [b, a];
        // The long-poll waits on the other instance before the write.
        const polled = readPage(reader.url, TOKENS.a, { after: cursor, wait: 10 });
        await new Promise((resolve) => setTimeout(resolve, 100));
        const res = await rawRequest(writer.url, jsonRequest('POST', '/v1/customers', TOKENS.a, { email: `i${n}@instances.example` }));
        expect(res.status).toBe(201);
        const acknowledged = Date.now();
        const id = (JSON.parse(res.text) as { data: { Customer: { id: string } } }).data.Customer.id;
        const page = await polled;
        latencies.push(Date.now() - acknowledged);
        expect(page.entries.map((e: FeedEntry) => e.subject)).toEqual([id]);
        cursor = page.cursor;
        const k = reader === a ? 0 : 1;
        expect(await streams[k].until(() => arrived[k].has(id), 5_000)).toBe(true);
        latencies.push(arrived[k].get(id)! - acknowledged);
      }
      for (const stream of streams) {
        expect(stream.entries).toHaveLength(WRITES);
        stream.close();
      }
      // Generous bounds: the median within a second, none past three.
      latencies.sort((x, y) => x - y);
      expect(latencies[Math.floor(latencies.length / 2)]).toBeLessThan(1000);
      expect(latencies[latencies.length - 1]).toBeLessThan(3000);
      // Both instances tell the same feed, with the same cursors.
      expect((await readFeed(b.url, TOKENS.a)).entries).toEqual((await readFeed(a.url, TOKENS.a)).entries);
    } finally {
      await stop(a, b);
    }
  }, 120_000);
});
