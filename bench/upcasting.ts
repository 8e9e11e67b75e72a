import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { comparePositions, type EventBatch, type EventStore, START, type StoredEvent } from '../src/event-store/event-store.port';
import { UpcastingEventStore } from '../src/event-store/upcasting-event-store';
import { RECORD_KINDS } from '../src/read-models';
import { openEventStore } from '../src/stores/stores.module';
import { load1, numberArg } from './measure';
import { seedEvents } from './seed-events';

/** Events read into memory for the registry's own cost, and how many times they go through it. */
const SAMPLE = 200_000;
const PASSES = 10;

/**
 * `npm run bench -- upcasting [events] [--before <dir>] [--rounds N]`: what reading every event through its
 * kind's registry of upcasters (src/event-store/upcasting-event-store.ts) costs. Seeds two embedded
 * stores alike (bench/seed-events.ts, 1,000,000 events by default) and seals them: one in version 1
 * (as events were stored before they carried a version: each record event goes through the first
 * upcaster, timeFromRecorded) and one in version 2 (the current shape: passed as it is).
 *
 * 1. The registry alone: SAMPLE events of each store read into memory, then handed through
 *    UpcastingEventStore's subscription PASSES times: its CPU per event, in each shape.
 * 2. The operators' rebuild (`projections rebuild all --grace-seconds 0`, the CLI in a process of its
 *    own) of each store, by this build and, with `--before`, by a checkout of the build before the
 *    registry (built there with `npm run build`), alternately, `--rounds` times each (2 unless told), each build on its own
 *    copy of the store: events/s, and CPU per event (user + system of the process, from the shell's
 *    `times`).
 */
export async function main(args: string[]): Promise<void> {
  // The count is the number not an option's value (`--rounds 3` is no count).
  const count = Number(args.find((a, i) => /^\d+$/.test(a) && !args[i - 1]?.startsWith('--')) ?? 1_000_000);
  const beforeAt = args.indexOf('--before');
  const before = beforeAt >= 0 ? resolve(args[beforeAt + 1]) : undefined;
  const rounds = numberArg(args, '--rounds', 2);
  const dir = mkdtempSync(join(tmpdir(), 'bench-upcasting-'));
  try {
    const stores: Record<string, string> = {};
    for (const version of [1, 2] as const) {
      const file = join(dir, `v${version}.sqlite`);
      const started = Date.now();
      await seedEvents(file, count, { erasedOneIn: 100, version });
      await (await openEventStore({ sqliteFile: file }, RECORD_KINDS)).close(); // seals them in place
      console.log(`seeded and sealed ${count} events in version ${version} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      stores[`v${version}`] = file;
    }

    console.log(`\nThe registry alone, ${SAMPLE} events × ${PASSES} (load ${load1()}):`);
    for (const [shape, file] of Object.entries(stores)) {
      const batches = await readBatches(file, SAMPLE);
      const registry = new UpcastingEventStore(replaying(batches), RECORD_KINDS);
      const cpu = process.cpuUsage();
      let seen = 0;
      for (let pass = 0; pass < PASSES; pass++) {
        for await (const batch of registry.subscribeToAll(START, { signal: new AbortController().signal })) seen += batch.events.length;
      }
      const { user, system } = process.cpuUsage(cpu);
      console.log(`  ${shape}: ${((user + system) / seen).toFixed(3)} µs of CPU per event`);
    }

    const builds: [string, string][] = [['this build', resolve('dist')]];
    if (before) builds.push(['the build before', join(before, 'dist')]);
    console.log(`\nRebuild of every read model (projections rebuild all), alternately, ${rounds} times each:`);
    console.log('| build | events in | run | events/s | CPU µs per event | load (1 min) |');
    console.log('|---|---|---:|---:|---:|---:|');
    for (const [shape, file] of Object.entries(stores)) {
      // Each build on a data directory of its own: the store and its keys, copied.
      const copies = builds.map(([, dist], i) => {
        const dataDir = join(dir, `${shape}-${i}`);
        mkdirSync(dataDir);
        copyFileSync(file, join(dataDir, 'service.sqlite'));
        copyFileSync(join(dir, 'keys.sqlite'), join(dataDir, 'keys.sqlite'));
        return { dist, dataDir };
      });
      for (let run = 1; run <= rounds; run++) {
        for (const [i, [name]] of builds.entries()) {
          const { seconds, cpu } = rebuildWith(copies[i].dist, copies[i].dataDir);
          console.log(`| ${name} | version ${shape.slice(1)} | ${run} | ${Math.round(count / seconds)} | ${((cpu * 1e6) / count).toFixed(1)} | ${load1()} |`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first `limit` events of the store at `file`, in its subscription's batches, values opened. */
async function readBatches(file: string, limit: number): Promise<EventBatch[]> {
  const store = await openEventStore({ sqliteFile: file }, RECORD_KINDS);
  const stop = new AbortController();
  const batches: EventBatch[] = [];
  let events = 0;
  try {
    // The sealed store beneath the registry: the events as the registry gets them.
    const inner = (store as unknown as { inner: EventStore }).inner;
    const head = await inner.headPosition();
    for await (const batch of inner.subscribeToAll(START, { signal: stop.signal, maxBatchSize: 1000 })) {
      batches.push(batch);
      if ((events += batch.events.length) >= limit || comparePositions(batch.position, head) >= 0) stop.abort();
    }
  } finally {
    await store.close();
  }
  return batches;
}

/** A store whose subscription hands over `batches`, each event a fresh copy (as a store reads it anew). */
function replaying(batches: EventBatch[]): EventStore {
  const copy = (e: StoredEvent): StoredEvent => ({ ...e, metadata: { ...e.metadata } });
  return {
    async *subscribeToAll() {
      for (const batch of batches) yield { events: batch.events.map(copy), position: batch.position };
    },
  } as unknown as EventStore;
}

/** One `projections rebuild all` by the CLI in `dist`, on the stores in `dataDir`: its wall seconds and CPU seconds. */
function rebuildWith(dist: string, dataDir: string): { seconds: number; cpu: number } {
  const started = Date.now();
  const out = execFileSync('bash', ['-c', `node ${join(dist, 'cli.js')} projections rebuild all --grace-seconds 0 >/dev/null 2>&1; times`], {
    env: { ...process.env, DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  const seconds = (Date.now() - started) / 1000;
  // `times` prints the shell's own, then its children's: user and system, each as 0m1.234s.
  const [user, system] = out
    .trim()
    .split('\n')[1]
    .split(/\s+/)
    .map((time) => {
      const [, minutes, secs] = /(\d+)m([\d.]+)s/.exec(time)!;
      return Number(minutes) * 60 + Number(secs);
    });
  return { seconds, cpu: user + system };
}
