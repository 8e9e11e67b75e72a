// `npm run bench -- feed-scale [--records N] [--limit N]`
// Paging through the change feed of an account of 1,000,000 entries (issue 35, "Load"): seeds N
// customers (1,000,000 unless told) into one account as the scale bench does (bench/seed.ts, through
// the event store port), seals them as a first start after the upgrade to encryption does, folds
// every read model, the feed's index among them, in one rebuild (bench/rebuild.ts), then starts the
// service as users run it and reads the whole feed, one page of `limit` entries (1000 unless told)
// after another, as a consumer catching up would: pages/s, entries/s and the service's CPU per page
// in each twentieth of the feed. Then the same page (100 entries) read again and again at the
// start, the middle and the end of the feed: the cost of a page against the cursor's depth.
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECORD_KINDS } from '../src/read-models';
import { openEventStore } from '../src/stores/stores.module';
import { call, now, sleep } from './feed-client';
import { cpuTicks, load1, numberArg, pct } from './measure';
import { rebuildAll } from './rebuild';
import { seedCustomers } from './seed';
import { startService, stopService } from './service';

const TOKEN = 'feed-scale-token';
/** Parts of the feed whose rates are told apart. */
const PARTS = 20;
/** Reads of one page at each depth. */
const PROBES = 60;
const PROBE_LIMIT = 100;

export async function main(args: string[]): Promise<void> {
  const records = numberArg(args, '--records', 1_000_000);
  const limit = numberArg(args, '--limit', 1000);
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-feed-scale-'));
  const file = join(dataDir, 'service.sqlite');
  try {
    const seeded = await seedCustomers(file, { customers: records, accounts: 1, listedEmail: 'listed@example.com' });
    console.log(`seeded ${seeded.count.toLocaleString('en')} CustomerCreated events in one account in ${(seeded.ms / 1000).toFixed(1)} s (load ${load1()})`);
    const started = now();
    await (await openEventStore({ sqliteFile: file }, RECORD_KINDS)).close();
    console.log(`sealed them in ${((now() - started) / 1000).toFixed(1)} s (load ${load1()})`);
    const rebuilt = await rebuildAll(file);
    console.log(`folded every read model, the feed's index among them, in ${rebuilt.seconds.toFixed(1)} s (load ${load1()})`);

    const service = await startService(dataDir, { workers: 1, accessTokens: `${TOKEN}:account-0` });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const pid = service.child.pid!;
    const page = async (after: string | undefined, count: number) => {
      const sent = now();
      const answer = await call(service.url, TOKEN, 'GET', `/v1/events?limit=${count}${after ? `&after=${after}` : ''}`, undefined, agent);
      if (answer.status !== 200) throw new Error(`GET /v1/events answered ${answer.status}: ${answer.text.slice(0, 500)}`);
      return { ms: now() - sent, entries: (JSON.parse(answer.text).data as unknown[]).length, next: answer.headers['x-next-cursor'] as string };
    };
    try {
      while ((await call(service.url, TOKEN, 'GET', '/v1/events?limit=1', undefined, agent)).status === 503) await sleep(200);
      await page(undefined, limit); // its statements prepared, its code warm

      console.log(
        `\nThe whole feed, ${limit} entries a page, one page after another (WORKERS=1):\n\n| Part of the feed (entries) | pages/s | entries/s | service CPU ms per page | wall p50 ms | wall max ms | load (1 min) |\n|---|---:|---:|---:|---:|---:|---:|`,
      );
      const pagesPerPart = Math.max(1, Math.ceil(records / limit / PARTS));
      const depths = new Map<string, string | undefined>([['start', undefined]]);
      let cursor: string | undefined;
      let read = 0;
      let pages = 0;
      const walkStarted = now();
      const walkTicks = cpuTicks(pid);
      for (let done = false; !done;) {
        const from = read;
        const ticks = cpuTicks(pid);
        const partStarted = now();
        const walls: number[] = [];
        for (let i = 0; i < pagesPerPart; i++) {
          const p = await page(cursor, limit);
          walls.push(p.ms);
          read += p.entries;
          cursor = p.next;
          if (!depths.has('middle') && read >= records / 2) depths.set('middle', cursor);
          if (!depths.has('end') && read >= records - limit && read < records) depths.set('end', cursor);
          if (p.entries < limit) {
            done = true;
            break;
          }
        }
        pages += walls.length;
        const seconds = (now() - partStarted) / 1000;
        console.log(
          `| ${from.toLocaleString('en')}–${read.toLocaleString('en')} | ${(walls.length / seconds).toFixed(1)} | ${Math.round((read - from) / seconds).toLocaleString('en')} | ${(((cpuTicks(pid) - ticks) * 10) / walls.length).toFixed(1)} | ${pct(walls, 0.5).toFixed(1)} | ${Math.max(...walls).toFixed(1)} | ${load1()} |`,
        );
      }
      const walkSeconds = (now() - walkStarted) / 1000;
      console.log(
        `\nRead ${read.toLocaleString('en')} entries (of ${records.toLocaleString('en')} seeded) in ${pages} pages, ${walkSeconds.toFixed(1)} s: ${(pages / walkSeconds).toFixed(1)} pages/s, ${Math.round(read / walkSeconds).toLocaleString('en')} entries/s; the service's CPU ${(((cpuTicks(pid) - walkTicks) * 10) / pages).toFixed(1)} ms per page.`,
      );

      console.log(
        `\nOne page of ${PROBE_LIMIT} entries, read ${PROBES} times at each depth:\n\n| Cursor's depth | service CPU ms per page | wall p50 ms | wall max ms | load (1 min) |\n|---|---:|---:|---:|---:|`,
      );
      for (const [depth, after] of depths) {
        await page(after, PROBE_LIMIT);
        const walls: number[] = [];
        const ticks = cpuTicks(pid);
        for (let i = 0; i < PROBES; i++) walls.push((await page(after, PROBE_LIMIT)).ms);
        console.log(
          `| ${depth} | ${(((cpuTicks(pid) - ticks) * 10) / PROBES).toFixed(2)} | ${pct(walls, 0.5).toFixed(1)} | ${Math.max(...walls).toFixed(1)} | ${load1()} |`,
        );
      }
    } finally {
      agent.destroy();
      await stopService(service);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\nLoad average at the end: ${load1()}`);
}
