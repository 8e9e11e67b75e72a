import { EventStoreDBClient } from '@eventstore/db-client';
import * as grpc from '@grpc/grpc-js';
import { EventBatch, Position, START, StreamTombstonedError, WrongExpectedRevisionError } from '../../src/event-store/event-store.port';
import { EventStoreDbEventStore } from '../../src/event-store/eventstoredb-event-store';
import { rebuildProjections } from '../../src/projections/rebuild';
import { READ_MODELS } from '../../src/read-models';
import { SqliteReadStore } from '../../src/read-store/sqlite-read-store';
import { StoreUnavailableError, WriteOutcomeUnknownError } from '../../src/storage/store-unavailable.error';
import {
  answerReadBackwards,
  answerStreamRead,
  appendNotHandled,
  appendStreamDeleted,
  appendSuccess,
  appendWrongExpectedVersion,
  caughtUpMessage,
  checkpointMessage,
  confirmationMessage,
  describeRead,
  eventMessage,
  failNotLeader,
  failStreamDeleted,
  requiresLeader,
  ScriptedEvent,
  ScriptedServer,
  startScriptedEventStoreDb,
  tombstoneMessage,
  loggedLines,
  newEvent,
} from '../support/scripted-eventstoredb';
import { openTempSqlite } from '../support/temp-sqlite';

/**
 * The EventStoreDB adapter, driving the real @eventstore/db-client against a scripted gRPC
 * endpoint (test/support/scripted-eventstoredb.ts) that answers each case as the KurrentDB source
 * named in it does. These are not tests against EventStoreDB: the contract suite is
 * (test/contract, with EVENTSTORE_CONNECTION_STRING set).
 */

const DEADLINE_MS = 400;

const logged = loggedLines();

let server: ScriptedServer | undefined;
let store: EventStoreDbEventStore | undefined;
afterEach(async () => {
  await store?.close();
  await server?.close();
  store = server = undefined;
});

/** The adapter on a scripted server; `deadlineMs` longer where a test counts calls, not deadlines (a busy machine may stall a read past 400 ms). */
async function open(script: Parameters<typeof startScriptedEventStoreDb>[0], deadlineMs = DEADLINE_MS): Promise<EventStoreDbEventStore> {
  server = await startScriptedEventStoreDb(script);
  store = new EventStoreDbEventStore(EventStoreDBClient.connectionString(server.connectionString), deadlineMs);
  return store;
}

/** Resolves once `check` holds, polling; the jest timeout bounds it. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20));
}

describe('EventStoreDB adapter: every call is bounded by its deadline', () => {
  it('fails a read and the head with StoreUnavailableError when the server never answers, and cancels the call', async () => {
    const s = await open({}); // Streams.Read accepted and never answered
    await expect(s.readStream('customer-1')).rejects.toThrow(StoreUnavailableError);
    await expect(s.headPosition()).rejects.toThrow(StoreUnavailableError);
    // Both calls were cancelled, so the server can let them go.
    await until(() => server!.reads.length === 2 && server!.reads.every((call) => call.cancelled));
  });

  it('appends without asking which methods the server has: a server that never says still takes appends', async () => {
    // Before: the client's appendToStream first asked, with no deadline, and the append failed 503.
    const s = await open({ features: 'silent', append: (_request, answer) => answer(null, appendSuccess(0, 1234n)) });
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).resolves.toEqual({ revision: 0, position: { commit: 1234n, prepare: 1234n } });
  });

  it('fails an append the server never answers as of unknown outcome, and the call ends there too', async () => {
    const s = await open({ append: () => undefined });
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(WriteOutcomeUnknownError);
    // The call's own gRPC deadline ends it on the server as well: nothing is left open.
    await until(() => server!.appends.length === 1 && server!.appends[0].cancelled);
  });

  it('fails an append it could not send (nothing listens) as unavailable, its outcome known: not stored', async () => {
    const closed = new EventStoreDbEventStore(EventStoreDBClient.connectionString('esdb://127.0.0.1:1?tls=false'), 1500);
    try {
      const failure = await closed.appendToStream('customer-1', [newEvent()], 'no_stream').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect(failure).not.toBeInstanceOf(WriteOutcomeUnknownError);
    } finally {
      await closed.close();
    }
  });

  it('does not try again an append whose deadline the server says passed: the caller has waited long enough', async () => {
    let sent = 0;
    const s = await open({
      append: (_request, answer) => {
        sent += 1;
        answer({ code: grpc.status.DEADLINE_EXCEEDED, details: 'Deadline Exceeded' });
      },
    });
    // The server may have stored it as the deadline passed: its outcome is unknown.
    await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).rejects.toThrow(WriteOutcomeUnknownError);
    expect(sent).toBe(1);
  });

  it('subscribes again when a subscription is never confirmed', async () => {
    // A server confirms a subscription before anything else (Enumerator.AllSubscriptionFiltered.cs
    // v24.10.4 lines 161-162, SubscribeToLive then ConfirmSubscription); this one stays silent.
    const s = await open({});
    const abort = new AbortController();
    const iterator = s.subscribeToAll(START, { signal: abort.signal, streamPrefixes: ['customer-'] })[Symbol.asyncIterator]();
    const pending = iterator.next();
    await until(() => server!.reads.filter((call) => describeRead(call).subscription).length >= 2);
    abort.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(logged).toContainEqual(
      expect.stringMatching(/^warn: Subscription lost \(EventStoreDB is unreachable: no subscription confirmation within 400 ms\)/),
    );
  });
});

describe('EventStoreDB adapter: a server starting or overloaded', () => {
  for (const reason of ['Server Is Not Ready', 'Server Is Too Busy'] as const) {
    it(`retries an append answered "${reason}", and succeeds once the server takes it`, async () => {
      let attempts = 0;
      const s = await open({
        append: (_request, answer) => {
          attempts += 1;
          if (attempts < 3) answer(appendNotHandled(reason));
          else answer(null, appendSuccess(0, 1234n));
        },
      });
      await expect(s.appendToStream('customer-1', [newEvent()], 'no_stream')).resolves.toEqual({
        revision: 0,
        position: { commit: 1234n, prepare: 1234n },
      });
      expect(attempts).toBe(3);
    });

    it(`fails with StoreUnavailableError (503, not 500), its outcome known, when every attempt is answered "${reason}"`, async () => {
      const s = await open({ append: (_request, answer) => answer(appendNotHandled(reason)) });
      const failure = await s.appendToStream('customer-1', [newEvent()], 'no_stream').catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect(failure).not.toBeInstanceOf(WriteOutcomeUnknownError); // the server says it did not take it
    });
  }
});

describe('EventStoreDB adapter: subscriptions', () => {
  it('hands over batches as large as maxBatchSize once that many events wait', async () => {
    const s = await open({
      read: (call) => {
        call.write(confirmationMessage());
        for (let i = 0; i < 300; i++) call.write(eventMessage({ streamId: `customer-${i}`, revision: 0, commit: BigInt(100 + i) }));
      },
    });
    const abort = new AbortController();
    const iterator = s.subscribeToAll(START, { signal: abort.signal, maxBatchSize: 100 })[Symbol.asyncIterator]();
    // Each pause lets the events the server sent fill the subscription's buffer before reading on.
    const sizes: number[] = [];
    for (let total = 0; total < 300;) {
      await new Promise((r) => setTimeout(r, 500));
      const batch: EventBatch = (await iterator.next()).value;
      sizes.push(batch.events.length);
      total += batch.events.length;
    }
    abort.abort();
    await iterator.return?.();
    // Before the fix the stream's default buffer (16 objects) cut every batch to about 31 events.
    expect(Math.max(...sizes)).toBe(100);
  });

  it("ignores the server's end-of-log marker as a checkpoint, as 24.10.0-24.10.4 send it", async () => {
    // A filtered subscription from the start that met no matching event before going live sends
    // the checkpoint TFPos(-1, -1) it started from, which Position.FromInt64 turns into 2^64-1
    // (Enumerator.AllSubscriptionFiltered.cs v24.10.4 lines 147, 304-307 and 348-349;
    // src/EventStore.Core/Services/Transport/Common/Position.cs lines 23-26).
    const END = 2n ** 64n - 1n;
    const s = await open({
      read: (call) => {
        call.write(confirmationMessage());
        call.write(checkpointMessage(END));
        call.write(caughtUpMessage());
        call.write(checkpointMessage(800n));
      },
    });
    const abort = new AbortController();
    const iterator = s.subscribeToAll(START, { signal: abort.signal, streamPrefixes: ['customer-'] })[Symbol.asyncIterator]();
    const first: EventBatch = (await iterator.next()).value;
    abort.abort();
    await iterator.return?.();
    expect(first).toEqual({ events: [], position: { commit: 800n, prepare: 800n } });
    expect(logged).toContain("warn: Ignored the server's end-of-log marker as a checkpoint (18446744073709551615/18446744073709551615)");
  });

  it('starts again from the start when told to resume from the end-of-log marker (a checkpoint stored before the fix)', async () => {
    const s = await open({
      read: (call) => {
        call.write(confirmationMessage());
        call.write(eventMessage({ streamId: 'customer-1', revision: 0, commit: 1000n }));
      },
    });
    const abort = new AbortController();
    const beyond: Position = { commit: 2n ** 64n - 1n, prepare: 2n ** 64n - 1n };
    const iterator = s.subscribeToAll(beyond, { signal: abort.signal, streamPrefixes: ['customer-'] })[Symbol.asyncIterator]();
    const first: EventBatch = (await iterator.next()).value;
    abort.abort();
    await iterator.return?.();
    expect(first.events.map((e) => e.streamId)).toEqual(['customer-1']);
    const subscriptions = server!.reads.map(describeRead).filter((r) => r.subscription);
    expect(subscriptions[0]).toMatchObject({ fromStart: true });
    expect(logged).toContain(
      "error: Position 18446744073709551615/18446744073709551615 is the server's end-of-log marker, not a place in the log: folding again from the start",
    );
  });
});

describe('EventStoreDB adapter: a stream deleted on the server', () => {
  it("moves a subscription past a hard-deleted stream's tombstone, folding the events around it", async () => {
    const s = await open({
      read: (call) => {
        call.write(confirmationMessage());
        call.write(eventMessage({ streamId: 'customer-1', revision: 0, commit: 100n }));
        call.write(tombstoneMessage('customer-2', 200n));
        call.write(eventMessage({ streamId: 'customer-3', revision: 0, commit: 300n }));
        call.write(tombstoneMessage('customer-3', 400n));
      },
    });
    const abort = new AbortController();
    const iterator = s.subscribeToAll(START, { signal: abort.signal, streamPrefixes: ['customer-'] })[Symbol.asyncIterator]();
    const seen: string[] = [];
    let position: Position = START;
    while (position.commit < 400n) {
      const batch: EventBatch = (await iterator.next()).value;
      seen.push(...batch.events.map((e) => e.streamId));
      position = batch.position;
    }
    abort.abort();
    await iterator.return?.();
    // Before: the tombstone (not JSON, revision 2^63-1) failed the subscription, and it failed
    // again on every resubscription from the same position.
    expect(seen).toEqual(['customer-1', 'customer-3']);
    expect(position).toEqual({ commit: 400n, prepare: 400n });
    expect(server!.reads.filter((call) => describeRead(call).subscription)).toHaveLength(1);
  });

  it('answers an append to a hard-deleted stream as a 409 saying so, not a 500', async () => {
    // Read as never written, the stream is then appended to as no_stream, which the server refuses
    // as Deleted (appendStreamDeleted). Before: the client's StreamDeletedError went through untranslated.
    const s = await open({ append: (request, answer) => answer(appendStreamDeleted(request)) });
    const error = await s.appendToStream('customer-1', [newEvent()], 'no_stream').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StreamTombstonedError);
    expect(error).toMatchObject({ streamId: 'customer-1', message: expect.stringContaining('cannot be written again') }); // answered 409 (http/api-exception.filter.ts)
  });

  it("answers an append at a revision the stream has passed as the port's conflict, with the stream's revision", async () => {
    let sent = 0;
    const s = await open({
      append: (request, answer) => {
        sent += 1;
        answer(null, appendWrongExpectedVersion(request, 3));
      },
    });
    const error = await s.appendToStream('customer-1', [newEvent()], 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WrongExpectedRevisionError);
    expect(error).toMatchObject({ streamId: 'customer-1', expected: 1, actual: 3 });
    expect(sent).toBe(1); // a conflict is the server's answer, not tried again
  });

  it('reads a hard-deleted stream as one with no events', async () => {
    const s = await open({ read: (call) => failStreamDeleted(call, describeRead(call).stream!) });
    await expect(s.readStream('customer-1')).resolves.toEqual([]);
  });
});

describe('EventStoreDB adapter: reads of part of a stream', () => {
  const log: ScriptedEvent[] = Array.from({ length: 10 }, (_, revision) => ({ streamId: 'customer-1', revision, commit: BigInt(100 * (revision + 1)) }));

  it('reads a range of revisions as one forward read of that many from the first, on the leader', async () => {
    const s = await open({ read: (call) => answerStreamRead(call, log) });
    expect((await s.readStream('customer-1', 3, 4)).map((e) => e.revision)).toEqual([3, 4, 5, 6]);
    expect((await s.readStream('customer-1', 8, 5)).map((e) => e.revision)).toEqual([8, 9]);
    expect(server!.reads.map(describeRead).map(({ streamFrom, backwards, count }) => ({ streamFrom, backwards, count }))).toEqual([
      { streamFrom: 3n, backwards: false, count: 4 },
      { streamFrom: 8n, backwards: false, count: 5 },
    ]);
    expect(server!.reads.every(requiresLeader)).toBe(true);
  });

  it("reads a stream's last event as one backwards read of one from its end, on the leader; null for no stream", async () => {
    const s = await open({ read: (call) => answerStreamRead(call, log) });
    await expect(s.readLastEvent('customer-1')).resolves.toMatchObject({ streamId: 'customer-1', revision: 9, position: { commit: 1000n } });
    await expect(s.readLastEvent('customer-2')).resolves.toBeNull();
    expect(server!.reads.map(describeRead).map(({ stream, streamFrom, backwards, count }) => ({ stream, streamFrom, backwards, count }))).toEqual([
      { stream: 'customer-1', streamFrom: 'end', backwards: true, count: 1 },
      { stream: 'customer-2', streamFrom: 'end', backwards: true, count: 1 },
    ]);
    expect(server!.reads.every(requiresLeader)).toBe(true);
  });

  it('tries a read of the last event again when a node answers that it is not the leader', async () => {
    // Named leader: this very endpoint, which the client reconnects to and which answers the retry.
    const s = await open({ read: (call) => (server!.reads.length === 1 ? failNotLeader(call, server!.endpoint) : answerStreamRead(call, log)) });
    await expect(s.readLastEvent('customer-1')).resolves.toMatchObject({ revision: 9 });
    expect(server!.reads).toHaveLength(2);
  });
});

describe('EventStoreDB adapter: the head is where a subscription can get to', () => {
  // $all read backwards from the end, the server's own streams included (Enumerator.ReadAllBackwards.cs).
  const log: ScriptedEvent[] = [
    { streamId: '$stats-127.0.0.1:2113', revision: 7, commit: 3000n },
    { streamId: '$settings', revision: 0, commit: 2900n },
    { streamId: 'other-1', revision: 0, commit: 2800n },
    { streamId: 'customer-1', revision: 0, commit: 2700n },
  ];

  it("is the last event of a stream not the server's own", async () => {
    const s = await open({ read: (call) => answerReadBackwards(call, log) });
    expect(await s.headPosition()).toEqual({ commit: 2800n, prepare: 2800n });
  });

  it("is found past more than a page of the server's own events", async () => {
    const stats = Array.from({ length: 70 }, (_, i): ScriptedEvent => ({ streamId: '$stats-127.0.0.1:2113', revision: 100 - i, commit: 5000n - BigInt(i) }));
    const s = await open({ read: (call) => answerReadBackwards(call, [...stats, ...log]) }, 10_000);
    expect(await s.headPosition()).toEqual({ commit: 2800n, prepare: 2800n });
  });

  it("reads past thousands of the server's own events in a few reads, each longer than the one before", async () => {
    // A node idle for days with WriteStatsToDb on: its $stats stream's events at the end of the log.
    const stats = Array.from({ length: 10_000 }, (_, i): ScriptedEvent => ({
      streamId: '$stats-127.0.0.1:2113',
      revision: 20_000 - i,
      commit: 100_000n - BigInt(i),
    }));
    const s = await open({ read: (call) => answerReadBackwards(call, [...stats, ...log]) }, 10_000);
    expect(await s.headPosition()).toEqual({ commit: 2800n, prepare: 2800n });
    // 32, 128, 512, 2,048, 4,096 and 4,096 events: past the 10,000 in six reads, where pages of 32 took 313.
    expect(server!.reads.map((call) => describeRead(call).count)).toEqual([32, 128, 512, 2048, 4096, 4096]);
  });

  it("is START when the log holds only the server's own events", async () => {
    const s = await open({ read: (call) => answerReadBackwards(call, log.slice(0, 2)) });
    expect(await s.headPosition()).toEqual(START);
  });

  it('lets a rebuild on an idle store finish once its subscription reaches the last event', async () => {
    // The rebuild's subscription (regex ^[^$]) gets the events it matches, then the checkpoint of
    // its last event when it goes live (Enumerator.AllSubscriptionFiltered.cs v24.10.4 lines
    // 304-307), then "caught up"; the $-events after it never reach it.
    const s = await open({
      read: (call) => {
        if (!describeRead(call).subscription) return answerReadBackwards(call, log);
        call.write(confirmationMessage());
        for (const e of [...log].reverse().filter((x) => !x.streamId.startsWith('$'))) call.write(eventMessage(e));
        call.write(checkpointMessage(2800n));
        call.write(caughtUpMessage());
      },
    });
    const sqlite = openTempSqlite();
    try {
      const reads = new SqliteReadStore(sqlite.db);
      const projections = READ_MODELS.filter((p) => p.name === 'profiles');
      const results = await rebuildProjections(projections, s, reads, { signal: new AbortController().signal, graceMs: 0 });
      expect(results).toEqual([expect.objectContaining({ projection: 'profiles', generation: 2 })]);
      expect((await reads.status('profiles')).live).toMatchObject({ generation: 2, position: { commit: 2800n, prepare: 2800n } });
    } finally {
      sqlite.dispose();
    }
  });
});

describe('EventStoreDB adapter: lag', () => {
  it('is unknown: positions are byte offsets in the log, not event counts', async () => {
    const s = await open({});
    expect(s.eventsBetween()).toBeNull();
  });
});
