import { EventStoreDBClient } from '@eventstore/db-client';
import * as grpc from '@grpc/grpc-js';
import { EventBatch, Position, START, StreamTombstonedError } from '../../src/event-store/event-store.port';
import { EventStoreDbEventStore } from '../../src/event-store/eventstoredb-event-store';
import { StoreUnavailableError } from '../../src/storage/store-unavailable.error';
import { startTestApp, TestApp, withToken } from '../support/test-app';
import {
  answerReadBackwards,
  answerStreamRead,
  AppendAnswer,
  appendedEvents,
  appendNotHandled,
  appendStreamDeleted,
  appendSuccess,
  appendTimedOut,
  caughtUpMessage,
  checkpointMessage,
  confirmationMessage,
  describeRead,
  passesFilter,
  eventMessage,
  failNotLeader,
  failNotReady,
  Member,
  ReadCall,
  requiresLeader,
  Script,
  ScriptedEvent,
  ScriptedServer,
  seedsConnectionString,
  startScriptedEventStoreDb,
  loggedLines,
  newEvent,
} from '../support/scripted-eventstoredb';

/**
 * The EventStoreDB adapter in a cluster: the real @eventstore/db-client against one or two
 * scripted gRPC endpoints (test/support/scripted-eventstoredb.ts), each answering as a KurrentDB
 * v24.10.6 leader, lagging follower or deposed leader does in the source cited. These are not
 * tests against EventStoreDB or a cluster of it: no election or replication runs here, only the
 * answers a node gives, its gossip's included; the client reconnects to the leader a NotLeader
 * answer names, or asks the seeds' gossip again.
 */

const DEADLINE_MS = 400;
/** The watchdog's silence here; the service's default is 10 s. */
const SILENCE_MS = 300;

const logged = loggedLines();

let servers: ScriptedServer[] = [];
let store: EventStoreDbEventStore | undefined;
const abort = new Set<AbortController>();
afterEach(async () => {
  for (const a of abort) a.abort();
  abort.clear();
  await store?.close();
  await Promise.all(servers.map((s) => s.close()));
  store = undefined;
  servers = [];
});

async function node(script: Script): Promise<ScriptedServer> {
  const server = await startScriptedEventStoreDb(script);
  servers.push(server);
  return server;
}

/**
 * The adapter, connected to `server` only: it reaches others when a NotLeader answer names them.
 * With a connection string of seeds, to the leader their gossip names. It makes a new client
 * from the same string when the current one is stuck, as the service's does. `deadlineMs` longer
 * where a test is about answers, not deadlines: a loaded machine may stall a call past 400 ms.
 */
function connect(server: ScriptedServer | string, deadlineMs = DEADLINE_MS): EventStoreDbEventStore {
  const connectionString = typeof server === 'string' ? server : server.connectionString;
  const client = () => EventStoreDBClient.connectionString(connectionString);
  store = new EventStoreDbEventStore(client(), deadlineMs, SILENCE_MS, client);
  return store;
}

/** A deadline no answer in a test about answers comes near. */
const CALM_MS = 10_000;

/** Waits for `check`, failing after `ms`: a test that would wait forever fails as such. */
async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const subscriptions = (server: ScriptedServer) => server.reads.filter((call) => describeRead(call).subscription);

/** A read of a stream, answered from `log` from its revision, at most its count (see answerStreamRead). */
const answerStream = answerStreamRead;

/**
 * A filtered subscription to $all, answered from `log` as a node whose log it is, read in one
 * page (fewer than 32 events): confirmed first (Enumerator.AllSubscriptionFiltered.cs v24.10.6
 * lines 161-162). Started at or past the last event (or on an empty log), it goes live at once
 * (lines 171-172), with no checkpoint. Else it sends the events after its start that its prefix matches, then the
 * checkpoint it has when it goes live (lines 318-328): the last event sent, else its start (the
 * first record of the log, 0/0, for one from the start: lines 319-324), and "caught up" (lines
 * 214-215). Then nothing, as a node that lost its cluster sends nothing while keeping the call
 * open (SubscriptionsService.cs lines 101-108: subscriptions are dropped only on shutdown).
 */
function answerSubscription(call: ReadCall, log: ScriptedEvent[]): void {
  const read = describeRead(call);
  const ordered = [...log].sort((a, b) => (a.commit < b.commit ? -1 : 1));
  // The last indexed position: the last event's (IndexCommitter.cs v24.10.6 lines 322 and 431).
  const lastIndexed = ordered.length > 0 ? ordered[ordered.length - 1].commit : 0n;
  call.write(confirmationMessage());
  if (ordered.length > 0 && (read.from === undefined || read.from < lastIndexed)) {
    const sent = ordered.filter((e) => (read.from === undefined || e.commit > read.from) && passesFilter(read, e.streamId));
    for (const e of sent) call.write(eventMessage(e));
    call.write(checkpointMessage(sent.length > 0 ? sent[sent.length - 1].commit : (read.from ?? 0n)));
  }
  call.write(caughtUpMessage());
}

/** A stream read answered an event every 350 ms, as a server that has gone quiet mid-read; stopped if cancelled. */
function answerSlowly(call: ReadCall, log: ScriptedEvent[]): void {
  const timers = log.map((e, i) => setTimeout(() => call.write(eventMessage(e)), 350 * i));
  timers.push(setTimeout(() => call.end(), 350 * log.length));
  call.on('cancelled', () => timers.forEach(clearTimeout));
}

/** Answers every read from `log`, newest first for $all read backwards. */
function answerFrom(log: ScriptedEvent[]) {
  return (call: ReadCall) => {
    const read = describeRead(call);
    if (read.stream !== undefined) return answerStream(call, log);
    if (read.subscription) return answerSubscription(call, log);
    answerReadBackwards(
      call,
      [...log].sort((a, b) => (a.commit > b.commit ? -1 : 1)),
    );
  };
}

/** Follows a subscription in the background, keeping every batch it hands over. */
function follow(s: EventStoreDbEventStore, from: Position): EventBatch[] {
  const controller = new AbortController();
  abort.add(controller);
  const batches: EventBatch[] = [];
  void (async () => {
    for await (const batch of s.subscribeToAll(from, { signal: controller.signal, streamPrefixes: ['customer-'] })) batches.push(batch);
  })();
  return batches;
}

const delivered = (batches: EventBatch[]) => batches.flatMap((b) => b.events.map((e) => `${e.streamId}@${e.revision}`));

describe('EventStoreDB in a cluster: reads go to the leader', () => {
  // The leader's log, and that of a follower that has not yet replicated its last event.
  const leaderLog: ScriptedEvent[] = [
    { streamId: 'customer-1', revision: 0, commit: 1000n },
    { streamId: 'customer-1', revision: 1, commit: 2000n },
  ];
  const followerLog = leaderLog.slice(0, 1);

  /**
   * A follower: a call that requires the leader is answered NotLeader naming it (ClusterVNodeController.cs
   * v24.10.6 lines 691-701 and 739-749); any other read is served from its own, lagging log.
   */
  const follower = (leader: ScriptedServer) =>
    node({ read: (call) => (requiresLeader(call) ? failNotLeader(call, leader.endpoint) : answerFrom(followerLog)(call)) });

  it("reads a record's stream on the leader, not from a follower that lags", async () => {
    const leader = await node({ read: answerFrom(leaderLog) });
    const s = connect(await follower(leader), CALM_MS);
    // Before: the follower answered, without the last event, and an update decided on a stale fold.
    expect((await s.readStream('customer-1')).map((e) => e.revision)).toEqual([0, 1]);
    expect(leader.reads.map(requiresLeader)).toEqual([true]);
  });

  it("reads the head on the leader, not a follower's older one", async () => {
    const leader = await node({ read: answerFrom(leaderLog) });
    const s = connect(await follower(leader), CALM_MS);
    expect(await s.headPosition()).toEqual({ commit: 2000n, prepare: 2000n });
  });

  it('subscribes on the leader: a follower confirms, then fails its first catch-up read NotLeader', async () => {
    // The follower confirms before it reads (Enumerator.AllSubscriptionFiltered.cs v24.10.6 lines
    // 161-162); its first catch-up page requires the leader (lines 176, 459-474), and the NotLeader
    // answer ends the call (lines 281-283 and 179-183; Streams.Read.cs lines 87-88 and 324-325).
    const leader = await node({ read: answerFrom(leaderLog) });
    const followerNode = await node({
      read: (call) => {
        if (!requiresLeader(call)) return answerFrom(followerLog)(call);
        call.write(confirmationMessage());
        failNotLeader(call, leader.endpoint);
      },
    });
    const batches = follow(connect(followerNode, CALM_MS), START);
    await until(() => delivered(batches).length >= 2);
    expect(delivered(batches)).toEqual(['customer-1@0', 'customer-1@1']);
    expect(subscriptions(leader).map(requiresLeader)).toEqual([true]);
  });

  it("takes a checkpoint beyond a lagging node's log end as it is, and resumes from one, never from the start", async () => {
    // Answered by a node whose log ends at 1000: before, a stored checkpoint of 5000 read as
    // "beyond the end of the log" and the read model was folded again from the start.
    const lagging = await node({
      read: (call) => {
        const read = describeRead(call);
        if (!read.subscription) return answerReadBackwards(call, followerLog);
        call.write(confirmationMessage());
        call.write(checkpointMessage(6000n));
      },
    });
    const batches = follow(connect(lagging, CALM_MS), { commit: 5000n, prepare: 5000n });
    await until(() => batches.length >= 1);
    expect(subscriptions(lagging).map(describeRead)).toEqual([expect.objectContaining({ fromStart: false, from: 5000n })]);
    expect(batches[0].position).toEqual({ commit: 6000n, prepare: 6000n });
    expect(logged).toEqual([]);
  });

  it("answers 503, not 500, when an append's position cannot be read back", async () => {
    // The server answers an append it recognises as already stored without a position
    // (Streams.Append.cs v24.10.6 lines 132-133); the stream is then not found on the node read.
    const server = await node({
      read: (call) => answerStream(call, []),
      append: (_request, answer) => answer(null, appendSuccess(0)),
    });
    const s = connect(server, CALM_MS);
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StoreUnavailableError);
    expect(server.reads.map(requiresLeader)).toEqual([true]);
  });

  it("reads an append's position back on the leader when the node that took it was deposed", async () => {
    const leader = await node({ read: answerFrom([{ streamId: 'customer-1', revision: 0, commit: 1234n }]) });
    const deposed = await node({
      read: (call) => failNotLeader(call, leader.endpoint),
      append: (_request, answer) => answer(null, appendSuccess(0)),
    });
    const s = connect(deposed, CALM_MS);
    // Before: the NotLeader read was not tried again; the append was, on a leader that never answered it.
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).resolves.toEqual({ revision: 0, position: { commit: 1234n, prepare: 1234n } });
  });
});

describe('EventStoreDB in a cluster: a subscription that goes silent is renewed', () => {
  it('resubscribes once the head moves past a silent subscription, and the new event reaches the consumer', async () => {
    // Each subscription catches up, then hears nothing more, whatever is appended.
    const log: ScriptedEvent[] = [{ streamId: 'customer-1', revision: 0, commit: 100n }];
    const server = await node({
      read: answerFrom(log),
      append: (_request, answer) => {
        log.push({ streamId: 'customer-2', revision: 0, commit: 200n });
        answer(null, appendSuccess(0, 200n));
      },
    });
    const s = connect(server);
    const batches = follow(s, START);
    await until(() => delivered(batches).length === 1);
    const first = subscriptions(server)[0];
    await s.appendToStream('customer-2', [newEvent()], 'no_stream');
    await until(() => delivered(batches).length === 2);
    expect(delivered(batches)).toEqual(['customer-1@0', 'customer-2@0']);
    expect(subscriptions(server).map(describeRead)[1]).toMatchObject({ fromStart: false, from: 100n });
    expect(first.cancelled).toBe(true);
    expect(logged).toContainEqual(expect.stringMatching(/subscription silent for 300 ms while customer-2@0 lies past it at 200\/200/));
  });

  it('keeps a silent subscription while the head has not moved past it', async () => {
    const server = await node({ read: answerFrom([{ streamId: 'customer-1', revision: 0, commit: 100n }]) });
    const batches = follow(connect(server), START);
    const heads = () => server.reads.filter((call) => !describeRead(call).subscription).length;
    // The watchdog looked at the head three times, and found nothing written.
    await until(() => heads() >= 3);
    expect(subscriptions(server)).toHaveLength(1);
    expect(delivered(batches)).toEqual(['customer-1@0']);
  });

  it('keeps a silent subscription while only streams its filter leaves out are written', async () => {
    // Other streams are written all along, fewer than 32 between checks: the server owes the
    // subscription no checkpoint for them (Enumerator.AllSubscriptionFiltered.cs v24.10.6 line 67;
    // SubscriptionsService.cs lines 372-382), and a renewed one would hear nothing of them either
    // (lines 307-311 and 326-328: its checkpoint going live is its start).
    // Before: renewed, with a "Subscription lost" warning, at every check that found a new head.
    const log: ScriptedEvent[] = [{ streamId: 'customer-1', revision: 0, commit: 100n }];
    const server = await node({ read: answerFrom(log) });
    let profiles = 0;
    const writes = setInterval(() => {
      profiles += 1;
      log.push({ streamId: `profile-${profiles}`, revision: 0, commit: 100n + BigInt(profiles) * 100n });
    }, 100);
    try {
      const batches = follow(connect(server), START);
      const checks = () => server.reads.filter((call) => !describeRead(call).subscription).length;
      await until(() => checks() >= 4);
      expect(subscriptions(server)).toHaveLength(1);
      expect(delivered(batches)).toEqual(['customer-1@0']);
      expect(logged.filter((line) => line.includes('Subscription lost'))).toEqual([]);
    } finally {
      clearInterval(writes);
    }
  });

  it('renews a silent subscription whose own event lies more than a page past it', async () => {
    // The log past the subscription is read backwards a page (32 events) at a time, down to it.
    const log: ScriptedEvent[] = [{ streamId: 'customer-1', revision: 0, commit: 100n }];
    const server = await node({ read: answerFrom(log) });
    const batches = follow(connect(server), START);
    await until(() => delivered(batches).length === 1);
    log.push({ streamId: 'customer-2', revision: 0, commit: 200n });
    for (let i = 1; i <= 40; i++) log.push({ streamId: `profile-${i}`, revision: 0, commit: 200n + BigInt(i) * 10n });
    await until(() => delivered(batches).length === 2);
    expect(delivered(batches)).toEqual(['customer-1@0', 'customer-2@0']);
    // The first page ends at profile-9 (290): the next starts there and finds customer-2.
    const scans = server.reads.filter((call) => !describeRead(call).subscription).map(describeRead);
    expect(scans).toContainEqual(expect.objectContaining({ backwards: true, count: 32, from: 290n }));
  });

  it('renews a subscription a lagging follower took live without asking for the leader', async () => {
    // Started at or past the follower's last indexed position, a subscription goes live at once
    // with no catch-up read, so the follower never answers NotLeader (Enumerator.
    // AllSubscriptionFiltered.cs v24.10.6 lines 161-172 and 214-217). The head read asks for the
    // leader and moves the client there (ClusterVNodeController.cs lines 739-749).
    const leader = await node({ read: answerFrom([{ streamId: 'customer-1', revision: 0, commit: 6000n }]) });
    const follower = await node({
      read: (call) => {
        if (requiresLeader(call) && !describeRead(call).subscription) return failNotLeader(call, leader.endpoint);
        call.write(confirmationMessage());
        call.write(caughtUpMessage());
      },
    });
    const batches = follow(connect(follower), { commit: 5000n, prepare: 5000n });
    await until(() => delivered(batches).length === 1);
    expect(delivered(batches)).toEqual(['customer-1@0']);
    expect(subscriptions(leader).map(describeRead)).toEqual([expect.objectContaining({ from: 5000n })]);
  });

  /**
   * Two nodes given as seeds: A leads, then loses its quorum and retires to Unknown with no leader
   * known (ClusterVNodeController.cs v24.10.6 lines 1124-1127, 376-383), while B is elected. A keeps
   * the subscriptions it serves open and silent; it answers reads requiring the leader UNAVAILABLE
   * "Server Is Not Ready" (failNotReady), and appends "Server Is Not Ready" (lines 155-159;
   * Streams.Append.cs lines 110-113), after giving up the one it had in flight as a commit timeout
   * (appendTimedOut). Its gossip lists itself as Unknown and B
   * as it last saw it, a follower it lost; B's lists B as the leader.
   */
  async function leaderChange(before: ScriptedEvent[], after: ScriptedEvent[], subscribe = true) {
    let deposed = false;
    let appends = 0;
    const members = (): Member[] =>
      deposed
        ? [
            { endpoint: a.endpoint, state: 'unknown' },
            { endpoint: b.endpoint, state: 'follower', alive: false },
          ]
        : [
            { endpoint: a.endpoint, state: 'leader' },
            { endpoint: b.endpoint, state: 'follower' },
          ];
    const a: ScriptedServer = await node({
      read: (call) => {
        if (!deposed) return answerFrom(before)(call);
        if (describeRead(call).subscription) call.write(confirmationMessage());
        failNotReady(call);
      },
      append: (_request, answer) => {
        appends += 1;
        answer(appends === 1 ? appendTimedOut() : appendNotHandled('Server Is Not Ready'));
      },
      gossip: members,
    });
    const b: ScriptedServer = await node({
      read: answerFrom(after),
      append: (_request, answer) => answer(null, appendSuccess(1, 200n)),
      gossip: () => [
        { endpoint: a.endpoint, state: deposed ? 'unknown' : 'leader', alive: !deposed },
        { endpoint: b.endpoint, state: deposed ? 'leader' : 'follower' },
      ],
    });
    const s = connect(seedsConnectionString(a, b));
    let batches: EventBatch[] = [];
    if (subscribe) {
      batches = follow(s, START);
      await until(() => delivered(batches).length === 1);
    } else {
      await s.headPosition();
    }
    expect(a.reads).not.toHaveLength(0);
    deposed = true;
    return { a, b, s, batches, appends: () => appends };
  }

  const before: ScriptedEvent[] = [{ streamId: 'customer-1', revision: 0, commit: 100n }];
  const after: ScriptedEvent[] = [...before, { streamId: 'customer-1', revision: 1, commit: 200n }];

  it('survives a leader change during a subscription: the seeds are asked again for the leader', async () => {
    // The watchdog's read on A fails UNAVAILABLE; the client reconnects through the seeds' gossip,
    // putting A last (client 6.2.1 Client/index.ts lines 516-567 and 594-613; discovery.ts lines
    // 41-52), and the read, tried again, and the renewed subscription reach B.
    const { a, b, batches } = await leaderChange(before, after);
    await until(() => delivered(batches).length === 2);
    expect(delivered(batches)).toEqual(['customer-1@0', 'customer-1@1']);
    expect(subscriptions(a)[0].cancelled).toBe(true);
    expect(subscriptions(b).map(describeRead)).toEqual([expect.objectContaining({ from: 100n })]);
  });

  it('survives a leader change during an append: "not ready" makes it ask the seeds again', async () => {
    // A answers the append "not ready" (after giving up the first as a commit timeout); the
    // adapter replaces its client, whose discovery asks the seeds' gossip, which name B. Before: the three tries all went to A, and the
    // append answered 503 while B led.
    // No subscription here: its watchdog's read would move the client to B by itself.
    const { b, s, appends } = await leaderChange(before, after, false);
    await expect(s.appendToStream('customer-1', [newEvent()], 0)).resolves.toEqual({ revision: 1, position: { commit: 200n, prepare: 200n } });
    expect(appends()).toBe(2);
    expect(b.reads).toHaveLength(0);
    expect(logged).toContainEqual(expect.stringMatching(/Connecting to EventStoreDB again after an append answered ".*Server Is Not Ready"/));
  });

  it('leaves a node that keeps the connection but stops answering, for the leader the seeds name', async () => {
    // A confirms subscriptions and goes live (as from a position at its end: Enumerator.
    // AllSubscriptionFiltered.cs v24.10.6 lines 161-172), but answers no read: the connection
    // stays up (keepalive is answered), so the client never reconnects by itself; our deadline
    // cancels the read, which the client takes for its own cancellation (client 6.2.1
    // utils/CommandError.ts lines 489-491). Before: renewed on A again and again, never reaching B.
    let hung = false;
    const a: ScriptedServer = await node({
      read: (call) => {
        if (!hung) return answerFrom(before)(call);
        if (describeRead(call).subscription) {
          call.write(confirmationMessage());
          call.write(caughtUpMessage());
        }
      },
      gossip: () => [
        { endpoint: a.endpoint, state: hung ? 'unknown' : 'leader' },
        { endpoint: b.endpoint, state: 'follower', alive: !hung },
      ],
    });
    const b: ScriptedServer = await node({
      read: answerFrom(after),
      gossip: () => [
        { endpoint: a.endpoint, state: hung ? 'unknown' : 'leader', alive: !hung },
        { endpoint: b.endpoint, state: hung ? 'leader' : 'follower' },
      ],
    });
    const batches = follow(connect(seedsConnectionString(a, b)), START);
    await until(() => delivered(batches).length === 1);
    hung = true;
    await until(() => delivered(batches).length === 2, 5000);
    expect(delivered(batches)).toEqual(['customer-1@0', 'customer-1@1']);
    expect(subscriptions(b).map(describeRead)).toEqual([expect.objectContaining({ from: 100n })]);
    expect(logged).toContainEqual(expect.stringMatching(/Connecting to EventStoreDB again after a read left unanswered for 400 ms/));
  });
});

describe('EventStoreDB: a client replaced after a read went unanswered', () => {
  it('reads again, in full, a read of the old client its disposal cut short', async () => {
    // Reads of $all are never answered; the stream's first read gets its events 350 ms apart, each
    // within the deadline. Disposing the old client cancels it, and a read the client cancelled
    // ends as if complete (client 6.2.1 streams/utils/ReadStream.ts lines 34-40). The read again
    // is answered in full at once: 350 ms apart, a loaded machine's late timers took it past the
    // deadline too.
    const log: ScriptedEvent[] = [0, 1, 2].map((revision) => ({ streamId: 'customer-1', revision, commit: 100n * BigInt(revision + 1) }));
    let streamReads = 0;
    const server = await node({
      read: (call) => {
        if (describeRead(call).stream === undefined) return;
        streamReads += 1;
        if (streamReads > 1) return answerStreamRead(call, log);
        answerSlowly(call, log);
      },
    });
    const s = connect(server);
    const read = s.readStream('customer-1');
    await expect(s.headPosition()).rejects.toThrow(StoreUnavailableError);
    // Before the check: what came before the cut ([0, 1]), as if the stream ended there.
    expect((await read).map((e) => e.revision)).toEqual([0, 1, 2]);
    expect(server.reads.filter((call) => describeRead(call).stream === 'customer-1')).toHaveLength(2);
  });
});

describe('the service when its subscriptions go silent after catching up', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('shows a customer created while they are silent, in the list, rather than 503 and never', async () => {
    // Appends are stored and read back; every subscription catches up, then hears nothing more.
    const log: ScriptedEvent[] = [];
    let next = 1000n;
    const server = await node({
      read: answerFrom(log),
      append: (request, answer) => {
        const events = appendedEvents(request, log.filter((e) => e.streamId === request.streamId).length, next);
        next += 100n;
        log.push(...events);
        const last = events[events.length - 1];
        answer(null, appendSuccess(last.revision, last.commit));
      },
    });
    app = await startTestApp({
      env: { EVENTSTORE_CONNECTION_STRING: server.connectionString, STORE_TIMEOUT_MS: '1000', EVENTSTORE_SILENCE_MS: String(SILENCE_MS) },
    });
    // Before: 503 once READ_YOUR_WRITES_TIMEOUT_MS passed, and the list never showed the customer.
    const created = await app.http.post(withToken('customers')).send({ email: 'quiet@x.io' });
    expect(created.status).toBe(201);
    const list = await app.http.get(withToken('customers')).expect(200);
    expect(JSON.stringify(list.body)).toContain('quiet@x.io');
  });
});

describe('EventStoreDB: clients replaced, and what is left on them', () => {
  it("ends an append left unanswered on a client it replaced, by the call's own deadline", async () => {
    // The append's own gRPC deadline ends the call on the server too. Before, on the client's batch
    // appends: a stream opened after the replacement's disposal (deadline Infinity, client 6.2.1
    // batchAppend.ts lines 49-58) stayed open until another call on that client settled.
    const server = await node({ append: () => undefined });
    const s = connect(server);
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StoreUnavailableError);
    expect(logged).toContainEqual(expect.stringMatching(/Connecting to EventStoreDB again after an append left unanswered for 400 ms/));
    await until(() => server.appends.length === 1 && server.appends[0].cancelled, 3000);
  });

  it("lets a replaced client's append fail without touching the new client's: both end as their servers answer", async () => {
    // The client's own appendToStream kept every client's pending batch appends in one table
    // (6.2.1 batchAppend.ts lines 32-35, 112-117): the replaced client's stream failing rejected the
    // new client's append, whose answer then threw in grpc-js (line 61), an uncaught exception that
    // ended the process. Here the replaced client's node drops its append (UNAVAILABLE) while the
    // new client's waits for its answer; the dropped one is tried again on the new client.
    let appends = 0;
    const server = await node({
      append: (_request, answer) => {
        appends += 1;
        if (appends === 1) setTimeout(() => answer({ code: grpc.status.UNAVAILABLE, details: 'node shutting down' }), 150);
        else setTimeout(() => answer(null, appendSuccess(0, BigInt(appends) * 100n)), 200);
      },
    });
    const s = connect(server);
    const head = s.headPosition().catch((error: Error) => error); // unanswered: replaces the client at 400 ms
    await new Promise((r) => setTimeout(r, 340));
    const onReplaced = s.appendToStream('customer-1', [newEvent()], 'no_stream');
    expect(await head).toBeInstanceOf(StoreUnavailableError);
    const onNew = s.appendToStream('customer-2', [newEvent()], 'no_stream');
    await expect(onNew).resolves.toMatchObject({ revision: 0 });
    await expect(onReplaced).resolves.toMatchObject({ revision: 0 });
    expect(appends).toBe(3);
  });

  it('lives through a failed call whose reconnection finds no leader: no unhandled rejection ends the process', async () => {
    // The client reconnects after a call failed UNAVAILABLE (a "not ready" append) without awaiting
    // it, and that reconnection waits on any discovery under way (client 6.2.1 Client/index.ts lines
    // 479 and 544): one that finds no leader (an election, every member Unknown) rejected it
    // unhandled (discovery.ts line 78), which ends a Node process. Here one append is held by the
    // node while another's retry is in that discovery; the held one is then answered "not ready".
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      let electing = false;
      let held: AppendAnswer | undefined;
      const a: ScriptedServer = await node({
        gossip: () => [{ endpoint: a.endpoint, state: electing ? 'unknown' : 'leader' }],
        append: (request, answer) => {
          if (request.streamId === 'held' && !held) held = answer;
          else answer(appendNotHandled('Server Is Not Ready'));
        },
      });
      // A second seed that never answers: a cluster's connection string, so the client discovers.
      const seeds = `esdb://${a.endpoint.host}:${a.endpoint.port},127.0.0.1:1?tls=false&maxDiscoverAttempts=1&gossipTimeout=1`;
      const client = () => EventStoreDBClient.connectionString(seeds);
      // A deadline far past the held append's answer (about 0.6 s in), which a loaded machine once
      // stretched past 3 s: that append then ended as one whose outcome is unknown.
      store = new EventStoreDbEventStore(client(), 10_000, SILENCE_MS, client);
      const outcome = (p: Promise<unknown>) =>
        p.then(
          () => 'stored',
          (error: Error) => error.constructor.name,
        );
      // "Not ready" replaces the adapter's client; the next replacement waits for the deadline.
      const first = outcome(store.appendToStream('customer-0', [newEvent()], 'any'));
      await new Promise((r) => setTimeout(r, 100));
      const heldAppend = outcome(store.appendToStream('held', [newEvent()], 'any'));
      await until(() => held !== undefined);
      electing = true;
      const other = outcome(store.appendToStream('customer-2', [newEvent()], 'any'));
      await new Promise((r) => setTimeout(r, 400)); // its retry (after 250 ms) is in discovery
      held!(appendNotHandled('Server Is Not Ready'));
      expect(await Promise.all([first, heldAppend, other])).toEqual(['StoreUnavailableError', 'StoreUnavailableError', 'StoreUnavailableError']);
      await new Promise((r) => setTimeout(r, 1500));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('makes no new client after close(), when a call times out later', async () => {
    const server = await node({});
    let made = 0;
    const client = () => {
      made += 1;
      return EventStoreDBClient.connectionString(server.connectionString);
    };
    store = new EventStoreDbEventStore(client(), DEADLINE_MS, SILENCE_MS, client);
    const read = store.readStream('customer-1');
    await store.close();
    await expect(read).rejects.toThrow(StoreUnavailableError);
    // Before: the read's timer made a new client, never disposed.
    expect(made).toBe(1);
    expect(logged.filter((line) => line.includes('Connecting to EventStoreDB again'))).toEqual([]);
  });

  it('makes no new client for a connection string of one host and no discovery: it would reach the same node', async () => {
    const server = await node({ read: (call) => answerReadBackwards(call, []), append: () => undefined });
    store = await EventStoreDbEventStore.connect(server.connectionString, DEADLINE_MS, SILENCE_MS);
    await expect(store.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StoreUnavailableError);
    await expect(store.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StoreUnavailableError);
    // Before: one new client per timed-out append, each to the same endpoint.
    expect(logged.filter((line) => line.includes('Connecting to EventStoreDB again'))).toEqual([]);
  });

  it('replaces the client at most once per deadline while every node answers appends "not ready" (an election)', async () => {
    // During an election no node leads, and each answers appends "Server Is Not Ready"
    // (ClusterVNodeController.cs v24.10.6 lines 155-159; Streams.Append.cs lines 110-113).
    const gossip = (): Member[] => [
      { endpoint: a.endpoint, state: 'leader' },
      { endpoint: b.endpoint, state: 'follower' },
    ];
    const notReady: Script['append'] = (_request, answer) => answer(appendNotHandled('Server Is Not Ready'));
    const a: ScriptedServer = await node({ read: answerFrom([]), append: notReady, gossip });
    const b: ScriptedServer = await node({ read: answerFrom([]), append: notReady, gossip });
    const s = connect(seedsConnectionString(a, b));
    await s.headPosition();
    // When each replacement is logged (as it is made).
    const replacedAt: number[] = [];
    const push = logged.push;
    logged.push = (...lines: string[]) => {
      for (const line of lines) if (line.includes('Connecting to EventStoreDB again')) replacedAt.push(Date.now());
      return push.apply(logged, lines);
    };
    try {
      await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StoreUnavailableError);
    } finally {
      logged.push = push;
    }
    // Tries at 0, 0.25 and 0.75 s (later on a loaded machine): the first replaces the client, and
    // none replaces it again within the deadline (400 ms) of the last replacement. Before: each
    // try replaced the client (and cancelled every read and subscription on it), 250 ms apart.
    expect(replacedAt.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < replacedAt.length; i++) expect(replacedAt[i] - replacedAt[i - 1]).toBeGreaterThanOrEqual(DEADLINE_MS);
  });

  it('does not count a read cut short by a replacement as one of its tries', async () => {
    // The stream's first read is cut short by the replacement (as in the test above), the next two
    // are answered UNAVAILABLE "not ready", the fourth in full. Before: the cut-short read counted,
    // and the read failed 503 after the second "not ready".
    const log: ScriptedEvent[] = [0, 1].map((revision) => ({ streamId: 'customer-1', revision, commit: 100n * BigInt(revision + 1) }));
    let streamReads = 0;
    const server = await node({
      read: (call) => {
        if (describeRead(call).stream === undefined) return;
        streamReads += 1;
        if (streamReads === 2 || streamReads === 3) return failNotReady(call);
        if (streamReads > 3) return answerStreamRead(call, log);
        answerSlowly(call, log);
      },
    });
    const s = connect(server);
    const read = s.readStream('customer-1');
    await expect(s.headPosition()).rejects.toThrow(StoreUnavailableError);
    expect((await read).map((e) => e.revision)).toEqual([0, 1]);
    expect(streamReads).toBe(4);
  });

  it('does not retry an append the server refused after the client was replaced', async () => {
    // Reads of $all are never answered: the head read replaces the client at its deadline (1,000
    // ms here: 250 ms of room either side for a loaded machine). The append, started at 500 ms, is
    // answered 750 ms later, after the replacement and before its own deadline, on the replaced
    // client: refused, the stream was deleted for good. Any error of an append whose client had
    // changed was once retried, so it was sent twice.
    let sent = 0;
    const server = await node({
      append: (request, answer) => {
        sent += 1;
        setTimeout(() => answer(appendStreamDeleted(request)), 750);
      },
    });
    const s = connect(server, 1000);
    const head = s.headPosition().catch((error: Error) => error);
    await new Promise((r) => setTimeout(r, 500));
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(StreamTombstonedError);
    expect(await head).toBeInstanceOf(StoreUnavailableError);
    expect(logged).toContainEqual(expect.stringMatching(/Connecting to EventStoreDB again after a read left unanswered/));
    expect(sent).toBe(1);
  });

  it("reads an append's position back at the revision the server answered, not the stream's last", async () => {
    // A re-sent append recognised as stored may come without a position (Streams.Append.cs v24.10.6
    // lines 132-133); the stream has moved on since. positionOf reads one event from that revision.
    const log: ScriptedEvent[] = [0, 1, 2].map((revision) => ({ streamId: 'customer-1', revision, commit: 100n * BigInt(revision + 1) }));
    const server = await node({ read: answerFrom(log), append: (_request, answer) => answer(null, appendSuccess(1)) });
    const s = connect(server, CALM_MS);
    await expect(s.appendToStream('customer-1', [newEvent()], 0)).resolves.toEqual({ revision: 1, position: { commit: 200n, prepare: 200n } });
    expect(server.reads.map(describeRead)).toEqual([expect.objectContaining({ stream: 'customer-1', streamFrom: 1n, count: 1 })]);
  });
});
