// `npm run bench -- feed [--consumers N] [--accounts N] [--backlog N] [--commits N]`
// The change feed under load (issue 35, "Load"), on the built service as users run it (dist/main.js,
// npm start's Node flags, logs at info, metrics, rate limits on and raised above the load):
// 1. memory of N idle server-sent event streams (1,000 unless told) over several accounts: RSS and
//    anonymous memory (/proc/<pid>/smaps_rollup) and the V8 heap before and after, per connection;
// 2. commit to delivery: a writer creates records one at a time; each entry's arrival at the
//    account's connected streams and at a long-polling consumer, from the write's send and from its
//    201, at first with one consumer of each kind, then with the N streams connected;
// 3. a consumer that stops reading (its account holding a backlog of entries): when the service
//    cuts it off, its memory meanwhile, and the other consumers' delivery latency beside the run
//    before it;
// 4. two instances on one data directory: commit at one, delivery at the other, both ways.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, headCursor, heapOf, longPoll, memoryOf, Memory, now, openStream, sleep, stalledStream, Stream } from './feed-client';
import { cpuTicks, load1, numberArg, pct } from './measure';
import { RECORD_KINDS } from '../src/read-models';
import { openEventStore } from '../src/stores/stores.module';
import { rebuildAll } from './rebuild';
import { seedCustomers } from './seed';
import { Service, startService, stopService } from './service';

const tokenOf = (account: number) => `feed-token-${account}`;
const accountOf = (account: number) => `account-${account}`;
/** The service's default heartbeat (FEED_HEARTBEAT_MS): a stream that has not drained for two of them is cut off. */
const HEARTBEAT_MS = 10_000;

interface Options {
  consumers: number;
  accounts: number;
  backlog: number;
  commits: number;
}

/** Commits, and each one's arrivals at the consumers. */
class Deliveries {
  private readonly commits = new Map<string, { account: number; sent: number; answered: number }>();
  private readonly arrivals: { key: string; at: number; kind: 'stream' | 'poll' }[] = [];

  constructor(private readonly phase: string) {}

  listener(kind: 'stream' | 'poll') {
    return (data: string, at: number) => {
      const match = /feed-bench-(\w+)-(\d+)/.exec(data);
      if (match && match[1] === this.phase) this.arrivals.push({ key: match[2], at, kind });
    };
  }

  /** `count` creates, one at a time, `gapMs` apart, in accounts taken in turn; the service's CPU over them. */
  async write(service: Service, count: number, gapMs: number, accounts: number, first = 0): Promise<{ cpuMs: number; seconds: number }> {
    const agents = Array.from({ length: first + accounts }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    const ticks = cpuTicks(service.child.pid!);
    const started = now();
    try {
      for (let n = 0; n < count; n++) {
        const account = first + (n % accounts);
        const sent = now();
        const answer = await call(
          service.url,
          tokenOf(account),
          'POST',
          '/v1/customers',
          { name: `feed-bench-${this.phase}-${n}`, email: `feed-${n}@example.com` },
          agents[account],
        );
        if (answer.status !== 201) throw new Error(`create answered ${answer.status}: ${answer.text}`);
        this.commits.set(String(n), { account, sent, answered: now() });
        await sleep(gapMs);
      }
      // The last arrivals.
      await sleep(1000);
    } finally {
      agents.forEach((a) => a.destroy());
    }
    return { cpuMs: (cpuTicks(service.child.pid!) - ticks) * 10, seconds: (now() - started) / 1000 };
  }

  /** Latencies of one kind of consumer, from the send and from the 201, and how many arrived of those expected. */
  latencies(kind: 'stream' | 'poll', perAccount: (account: number) => number, from = 0, to = Infinity) {
    const fromSend: number[] = [];
    const fromAnswer: number[] = [];
    let expected = 0;
    for (const [, commit] of this.commits) if (commit.sent >= from && commit.sent < to) expected += perAccount(commit.account);
    for (const arrival of this.arrivals) {
      const commit = this.commits.get(arrival.key);
      if (arrival.kind !== kind || !commit || commit.sent < from || commit.sent >= to) continue;
      fromSend.push(arrival.at - commit.sent);
      fromAnswer.push(arrival.at - commit.answered);
    }
    const writes = [...this.commits.values()].filter((c) => c.sent >= from && c.sent < to).map((c) => c.answered - c.sent);
    return { fromSend, fromAnswer, expected, writes };
  }
}

const fmt = (ms: number) => (Number.isNaN(ms) ? '–' : ms.toFixed(1));

export async function main(args: string[]): Promise<void> {
  const options: Options = {
    consumers: numberArg(args, '--consumers', 1000),
    accounts: numberArg(args, '--accounts', 10),
    backlog: numberArg(args, '--backlog', 50_000),
    commits: numberArg(args, '--commits', 100),
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-bench-feed-'));
  const otherDir = mkdtempSync(join(tmpdir(), 'pcs-bench-feed-b-'));
  const tokens = Array.from({ length: options.accounts }, (_, i) => `${tokenOf(i)}:${accountOf(i)}`).join(',');
  const lines: string[] = [];
  const row = (what: string, figure: string, note = '') => {
    const line = `| ${what} | ${figure} | ${note} | ${load1()} |`;
    lines.push(line);
    console.log(line);
  };
  const services: Service[] = [];
  const streams: Stream[] = [];
  try {
    // Account 0 holds a backlog, for the consumer that stops reading to stall on.
    const seeded = await seedCustomers(join(dataDir, 'service.sqlite'), { customers: options.backlog, accounts: 1, listedEmail: 'listed@example.com' });
    console.log(`seeded ${seeded.count.toLocaleString('en')} customers in account 0 in ${(seeded.ms / 1000).toFixed(1)} s (load ${load1()})`);
    // Sealed as a first start after the upgrade to encryption does, and folded, before the service starts: it measures a service at rest.
    await (await openEventStore({ sqliteFile: join(dataDir, 'service.sqlite') }, RECORD_KINDS)).close();
    await rebuildAll(join(dataDir, 'service.sqlite'));
    // Room for the streams, the writer, the long-polls and the stalled consumer: MAX_CONNECTIONS is 2000 unless set.
    // Each account's token holds a share of the streams: its caps (FEED_STREAMS_PER_*) as high as the connections.
    const maxConnections = String(2 * options.consumers + 100);
    const env = { MAX_CONNECTIONS: maxConnections, FEED_STREAMS_PER_TOKEN: maxConnections, FEED_STREAMS_PER_ACCOUNT: maxConnections };
    const service = await startService(dataDir, { workers: 1, accessTokens: tokens, env });
    services.push(service);
    const pid = service.child.pid!;
    while ((await call(service.url, '', 'GET', '/health/ready')).status !== 200) await sleep(200);
    const heads = await Promise.all(Array.from({ length: options.accounts }, (_, i) => headCursor(service.url, tokenOf(i))));
    console.log(
      `\nService: WORKERS=1, MAX_CONNECTIONS=${maxConnections} (and FEED_STREAMS_PER_TOKEN, FEED_STREAMS_PER_ACCOUNT), FEED_HEARTBEAT_MS at its default (${HEARTBEAT_MS} ms).`,
    );
    console.log('\n| Measure | Figure | Notes | load (1 min) |\n|---|---:|---|---:|');

    // Commit to delivery with one stream and one long-poll (account 0), before the others connect.
    const alone = new Deliveries('alone');
    const one = openStream(service.url, tokenOf(0), heads[0], alone.listener('stream'));
    await one.opened;
    const onePoll = longPoll(service.url, tokenOf(0), heads[0], alone.listener('poll'));
    await sleep(500);
    const aloneWrite = await alone.write(service, Math.ceil(options.commits / 2), 100, 1);
    one.close();
    onePoll.stop();
    latencyRows(row, alone, 'one instance, one stream and one long-poll', () => 1, aloneWrite);

    // Idle streams: memory before, after N, and after N more (the second N then closed again), each
    // past a heartbeat, so that every stream has gone once round its idle loop.
    await sleep(2000);
    const before = await settledMemory(service);
    const perAccount = (account: number) => Math.floor(options.consumers / options.accounts) + (account < options.consumers % options.accounts ? 1 : 0);
    const busy = new Deliveries('busy');
    const stalledPhase = new Deliveries('stalled');
    const open = async (into: Stream[], count: number, onData: (data: string, at: number) => void) => {
      for (let i = 0; i < count; i += 50) {
        const batch: Stream[] = [];
        for (let j = i; j < Math.min(i + 50, count); j++)
          batch.push(openStream(service.url, tokenOf(j % options.accounts), heads[j % options.accounts], onData));
        await Promise.all(batch.map((s) => s.opened));
        into.push(...batch);
      }
    };
    let opening = now();
    const listeners = [busy.listener('stream'), stalledPhase.listener('stream')];
    await open(streams, options.consumers, (data, at) => listeners.forEach((l) => l(data, at)));
    const openSeconds = (now() - opening) / 1000;
    await sleep(HEARTBEAT_MS + 2000);
    const after = await settledMemory(service);
    const beats = streams.map((s) => s.heartbeats);
    const more: Stream[] = [];
    opening = now();
    await open(more, options.consumers, () => undefined);
    const moreSeconds = (now() - opening) / 1000;
    await sleep(HEARTBEAT_MS + 2000);
    const twice = await settledMemory(service);
    const moreBeats = more.map((s) => s.heartbeats);
    const ended = [...streams, ...more].filter((s) => s.ended).length;
    more.forEach((s) => s.close());
    const cost = (from: Memory, to: Memory, of: keyof Memory) => (((to[of] - from[of]) * 1024) / options.consumers).toFixed(1);
    const mb = (m: Awaited<ReturnType<typeof settledMemory>>) =>
      `RSS ${m.rss.toFixed(1)} MB, anonymous ${m.anonymous.toFixed(1)} MB, V8 heap used ${m.heap.toFixed(1)} MB, external ${m.external.toFixed(1)} MB`;
    row(
      `${options.consumers} idle streams over ${options.accounts} accounts: memory per connection`,
      `${cost(before, after, 'rss')} KB RSS, ${cost(before, after, 'anonymous')} KB anonymous`,
      `before: ${mb(before)}; after: ${mb(after)}; opened in ${openSeconds.toFixed(1)} s; ${Math.min(...beats)}–${Math.max(...beats)} heartbeats each after ${(HEARTBEAT_MS + 2000) / 1000} s`,
    );
    row(
      `${options.consumers} more (${2 * options.consumers} idle streams): memory per connection`,
      `${cost(after, twice, 'rss')} KB RSS, ${cost(after, twice, 'anonymous')} KB anonymous`,
      `after: ${mb(twice)}; opened in ${moreSeconds.toFixed(1)} s; ${Math.min(...moreBeats)}–${Math.max(...moreBeats)} heartbeats each; ${ended} of ${2 * options.consumers} ended by the service; the second ${options.consumers} closed after this`,
    );
    // Idle costs: the service's CPU over a heartbeat with every stream open and nothing written.
    const idleTicks = cpuTicks(pid);
    await sleep(HEARTBEAT_MS);
    row(
      `${options.consumers} idle streams: the service's CPU while idle`,
      `${((cpuTicks(pid) - idleTicks) / (HEARTBEAT_MS / 10)).toFixed(3)} cores`,
      `over ${HEARTBEAT_MS / 1000} s (one heartbeat each)`,
    );

    // Commit to delivery with every stream connected, and a long-poll in each account.
    const polls = Array.from({ length: options.accounts }, (_, i) => longPoll(service.url, tokenOf(i), heads[i], busy.listener('poll')));
    await sleep(500);
    const busyWrite = await busy.write(service, options.commits, 100, options.accounts);
    polls.forEach((p) => p.stop());
    const during = await memory(service);
    latencyRows(row, busy, `one instance, ${options.consumers} streams and ${options.accounts} long-polls connected`, perAccount, busyWrite, () => 1);
    // The cost of a commit's fan-out to an account's streams: each woken stream reads its page.
    for (const account of [0, 1]) {
      const fan = new Deliveries(`fan${account}`);
      const fanListener = fan.listener('stream');
      listeners.push(fanListener);
      const written = await fan.write(service, 30, 100, 1, account);
      listeners.splice(listeners.indexOf(fanListener), 1);
      const l = fan.latencies('stream', perAccount);
      row(
        `commits to account ${account} alone (${account === 0 ? `${options.backlog.toLocaleString('en')} entries` : 'tens of entries'}), ${perAccount(account)} streams on it: service CPU per commit`,
        `${(written.cpuMs / l.writes.length).toFixed(1)} ms`,
        `stream p50 ${fmt(pct(l.fromSend, 0.5))} ms, p99 ${fmt(pct(l.fromSend, 0.99))} ms; ${l.fromSend.length} of ${l.expected} arrivals; ${l.writes.length} creates, their 201 p50 ${fmt(pct(l.writes, 0.5))} ms`,
      );
    }
    row(`memory after those commits`, `${during.rss.toFixed(1)} MB RSS`, `anonymous ${during.anonymous.toFixed(1)} MB, heap ${during.heap.toFixed(1)} MB`);

    // A consumer of account 0 stops reading, from the start of its backlog; the others go on receiving.
    const peak = { rss: during.rss, anonymous: during.anonymous };
    const sampler = setInterval(() => {
      const m = memoryOf(pid);
      peak.rss = Math.max(peak.rss, m.rss);
      peak.anonymous = Math.max(peak.anonymous, m.anonymous);
    }, 250);
    const logged = service.output().split('the consumer stopped reading').length;
    const stallStarted = now();
    const stalled = stalledStream(service.url, tokenOf(0));
    let cutOffAt = NaN;
    const watcher = setInterval(() => {
      if (Number.isNaN(cutOffAt) && service.output().split('the consumer stopped reading').length > logged) cutOffAt = now();
    }, 100);
    // What the kernel holds for it, once its backlog has filled the buffers: the consumer's receive queue and the service's send queue.
    let queues = '';
    const queued = setTimeout(() => {
      const of = (filter: string) => execFileSync('ss', ['-tnH', filter], { encoding: 'utf8' }).trim().split(/\s+/);
      const mine = of(`sport = :${stalled.localPort}`);
      const theirs = of(`dport = :${stalled.localPort}`);
      queues = `after 15 s the kernel held ${(Number(mine[1]) / 1e6).toFixed(1)} MB unread at the consumer and ${(Number(theirs[2]) / 1e6).toFixed(1)} MB unsent at the service`;
    }, 15_000);
    const stallTicks = cpuTicks(pid);
    // Long enough for the service to cut it off (two heartbeats without a drain), and 10 s after as the control.
    const stallCommits = Math.ceil(((2 * HEARTBEAT_MS + 14_000) / 1000) * 5);
    const stallWrite = await stalledPhase.write(service, stallCommits, 200, options.accounts);
    clearInterval(sampler);
    clearInterval(watcher);
    clearTimeout(queued);
    const stallCpu = (cpuTicks(pid) - stallTicks) / 100;
    stalled.destroy();
    const afterStall = await memory(service);
    const burst = stallStarted + 5000;
    const windows = [
      ['its first 5 s (the burst of its backlog)', stalledPhase.latencies('stream', perAccount, 0, burst)],
      ['from 5 s until it was cut off', stalledPhase.latencies('stream', perAccount, burst, cutOffAt)],
      ['after it was cut off', stalledPhase.latencies('stream', perAccount, Number.isNaN(cutOffAt) ? Infinity : cutOffAt)],
    ] as const;
    row(
      `a consumer stops reading (account 0, from a backlog of ${options.backlog.toLocaleString('en')} entries): cut off after`,
      Number.isNaN(cutOffAt) ? 'NOT CUT OFF' : `${((cutOffAt - stallStarted) / 1000).toFixed(1)} s`,
      `service RSS peak ${peak.rss.toFixed(1)} MB (${during.rss.toFixed(1)} before it, ${afterStall.rss.toFixed(1)} after), anonymous peak ${peak.anonymous.toFixed(1)} MB (${during.anonymous.toFixed(1)} before); ${queues}; the service used ${(stallCpu / stallWrite.seconds).toFixed(2)} cores over the ${stallWrite.seconds.toFixed(0)} s`,
    );
    for (const [when, l] of windows) {
      row(
        `the other ${options.consumers} streams, ${when}: commit sent → entry received`,
        `p50 ${fmt(pct(l.fromSend, 0.5))} ms, p99 ${fmt(pct(l.fromSend, 0.99))} ms`,
        `${l.fromSend.length} of ${l.expected} arrivals; ${l.writes.length} creates, their 201 p50 ${fmt(pct(l.writes, 0.5))} ms`,
      );
    }

    for (const s of streams) s.close();
    await sleep(3000);
    const closed = await memory(service);
    row(`after the streams closed`, `${closed.rss.toFixed(1)} MB RSS`, `anonymous ${closed.anonymous.toFixed(1)} MB, heap ${closed.heap.toFixed(1)} MB`);

    // Two instances on one data directory: which one folds the feed's index decides how news reaches the other.
    const other = await startService(otherDir, { workers: 1, accessTokens: tokens, env: { DATA_DIR: dataDir } });
    services.push(other);
    const folding = async (s: Service) =>
      (JSON.parse((await call(s.url, '', 'GET', '/health/ready')).text).projections as { name: string; folding: boolean }[]).find((p) => p.name === 'feed')
        ?.folding;
    for (const [writer, reader, label] of [
      [service, other, 'first'],
      [other, service, 'second'],
    ] as const) {
      const across = new Deliveries(`across${label}`);
      // Account 0: the one the writes go to.
      const head = await headCursor(reader.url, tokenOf(0));
      const stream = openStream(reader.url, tokenOf(0), head, across.listener('stream'));
      await stream.opened;
      const poll = longPoll(reader.url, tokenOf(0), head, across.listener('poll'));
      await sleep(500);
      const written = await across.write(writer, Math.ceil(options.commits / 2), 100, 1);
      stream.close();
      poll.stop();
      latencyRows(
        row,
        across,
        `across instances: write to the one ${(await folding(writer)) ? 'folding' : 'not folding'} the feed's index, read at the one ${(await folding(reader)) ? 'folding' : 'not folding'}`,
        () => 1,
        written,
      );
    }
  } finally {
    for (const s of streams) s.close();
    for (const s of services.reverse()) await stopService(s);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(otherDir, { recursive: true, force: true });
  }
  console.log(`\nLoad average at the end: ${load1()}`);
}

/** The median of five samples a second apart: a sample falls between the collections of V8's garbage. */
async function settledMemory(service: Service): Promise<Memory & { heap: number; external: number }> {
  const samples: Awaited<ReturnType<typeof memory>>[] = [];
  for (let i = 0; i < 5; i++) {
    if (i > 0) await sleep(1000);
    samples.push(await memory(service));
  }
  const median = (of: keyof (typeof samples)[number]) =>
    pct(
      samples.map((s) => s[of]),
      0.5,
    );
  return { rss: median('rss'), peak: median('peak'), anonymous: median('anonymous'), heap: median('heap'), external: median('external') };
}

async function memory(service: Service): Promise<Memory & { heap: number; external: number }> {
  const heap = await heapOf(service.url);
  return { ...memoryOf(service.child.pid!), ...heap };
}

function latencyRows(
  row: (what: string, figure: string, note?: string) => void,
  deliveries: Deliveries,
  setting: string,
  streamsPerAccount: (account: number) => number,
  written: { cpuMs: number; seconds: number },
  pollsPerAccount: (account: number) => number = () => 1,
): void {
  const stream = deliveries.latencies('stream', streamsPerAccount);
  const poll = deliveries.latencies('poll', pollsPerAccount);
  const commits = stream.writes.length;
  for (const [kind, l] of [
    ['stream', stream],
    ['long-poll', poll],
  ] as const) {
    row(
      `${setting}: commit sent → entry received by a ${kind}`,
      `p50 ${fmt(pct(l.fromSend, 0.5))} ms, p99 ${fmt(pct(l.fromSend, 0.99))} ms`,
      `from the 201: p50 ${fmt(pct(l.fromAnswer, 0.5))}, p99 ${fmt(pct(l.fromAnswer, 0.99))} ms; ${l.fromSend.length} of ${l.expected} arrivals; ${commits} creates, their 201 p50 ${fmt(pct(l.writes, 0.5))} ms; service CPU ${(written.cpuMs / commits).toFixed(1)} ms per commit`,
    );
  }
}
