import * as grpc from '@grpc/grpc-js';
import { ClusterInfo, EndPoint as GossipEndPoint, MemberInfo } from '@eventstore/db-client/generated/gossip_pb';
import { GossipService } from '@eventstore/db-client/generated/gossip_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { Empty, StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { AppendReq, AppendResp, ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { Logger } from '@nestjs/common';
import type { NewEvent } from '../../src/event-store/event-store.port';
import { randomUUID } from 'node:crypto';

/**
 * A gRPC endpoint speaking EventStoreDB's client protocol, built from the client's own generated
 * service definitions and scripted by each test to answer one case as the server does. It is no
 * EventStoreDB: it shows what the adapter does with a given answer, nothing about the server.
 * The answers copy KurrentDB (github.com/kurrent-io/KurrentDB) at the tags named where used.
 */

export type ReadCall = grpc.ServerWritableStream<ReadReq, ReadResp>;
export type AppendCall = grpc.ServerReadableStream<AppendReq, AppendResp>;

/**
 * A Streams.Append call once the server has read all of it, as it does before writing: the options,
 * then every proposed message (Streams.Append.cs v24.10.6 lines 24-90).
 */
export interface AppendRequest {
  call: AppendCall;
  streamId: string;
  /** The expected revision: a number, or 'any', 'no_stream' or 'stream_exists'. */
  expected: number | 'any' | 'no_stream' | 'stream_exists';
  /** The events sent, JSON (as the adapter sends them), without a place in the log yet. */
  events: Pick<ScriptedEvent, 'id' | 'type' | 'data' | 'metadata'>[];
}

/** How an append is answered: a reply, or a gRPC status the server throws (see the helpers below). */
export type AppendAnswer = grpc.sendUnaryData<AppendResp>;

export interface Script {
  /** Streams.Read: reads and subscriptions. Unset: the call is left unanswered. */
  read?: (call: ReadCall) => void;
  /** Streams.Append, once the whole request has arrived. Unset: left unanswered. */
  append?: (request: AppendRequest, answer: AppendAnswer) => void;
  /** ServerFeatures.GetSupportedMethods: 'answer' (as 24.10 does) or 'silent' (never answers). */
  features?: 'answer' | 'silent';
  /** Gossip.Read: the members this node lists now. Unset, or none returned: the call is left unanswered. */
  gossip?: () => Member[] | undefined;
}

/** A cluster member as a node's gossip lists it. */
export interface Member {
  endpoint: Endpoint;
  state: 'leader' | 'follower' | 'unknown';
  alive?: boolean;
}

export interface ScriptedServer {
  connectionString: string;
  /** Where it listens, as a NotLeader answer names a leader. */
  endpoint: Endpoint;
  /** Every Streams.Read call received, in order. */
  reads: ReadCall[];
  /** Every Streams.Append call received, in order, from its start. */
  appends: AppendCall[];
  close(): Promise<void>;
}

export async function startScriptedEventStoreDb(script: Script): Promise<ScriptedServer> {
  const server = new grpc.Server();
  const reads: ReadCall[] = [];
  const appends: AppendCall[] = [];
  server.addService(StreamsService, {
    read: (call: ReadCall) => {
      reads.push(call);
      script.read?.(call);
    },
    append: (call: AppendCall, answer: AppendAnswer) => {
      appends.push(call);
      const messages: AppendReq[] = [];
      call.on('data', (message: AppendReq) => messages.push(message));
      call.on('end', () => script.append?.(appendRequest(call, messages), answer));
    },
  });
  server.addService(GossipService, {
    read: (_call: unknown, callback: grpc.sendUnaryData<ClusterInfo>) => {
      const members = script.gossip?.();
      if (members) callback(null, clusterInfo(members));
    },
  });
  server.addService(ServerFeaturesService, {
    getSupportedMethods: (_call: unknown, callback: grpc.sendUnaryData<SupportedMethods>) => {
      if (script.features !== 'silent') callback(null, supportedMethods());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    connectionString: `esdb://127.0.0.1:${port}?tls=false`,
    endpoint: { host: '127.0.0.1', port },
    reads,
    appends,
    // Forced: calls the script left open (subscriptions) would keep a graceful shutdown waiting.
    close: async () => server.forceShutdown(),
  };
}

export interface Endpoint {
  host: string;
  port: number;
}

/**
 * Whether the call asks for the leader: the `requires-leader` header, "true"
 * (src/EventStore.Core/Services/Transport/Grpc/ServiceBase.cs v24.10.6 lines 74-80; Constants.cs line 69).
 */
export function requiresLeader(call: ReadCall | AppendCall): boolean {
  return String(call.metadata.get('requires-leader')[0] ?? '').toLowerCase() === 'true';
}

/**
 * What a follower throws for a call that requires the leader: NotHandled NotLeader with the
 * leader's endpoint (ClusterVNodeController.cs v24.10.6 lines 679-761 for reads, 885-895 for
 * writes), which the gRPC layer throws as status NOT_FOUND with the `exception: not-leader` trailer
 * and the leader's host and port (RpcExceptions.cs lines 25-30 and 164-169; reads: Enumerator.cs
 * lines 37-42 and Streams.Read.cs lines 324-325; appends: Streams.Append.cs lines 110-113).
 */
export function notLeader(leader: Endpoint): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set('exception', 'not-leader');
  metadata.set('leader-endpoint-host', leader.host);
  metadata.set('leader-endpoint-port', String(leader.port));
  return { code: grpc.status.NOT_FOUND, details: 'Leader info available', metadata };
}

/** Ends a read as a follower does one that requires the leader (see notLeader). */
export function failNotLeader(call: ReadCall, leader: Endpoint): void {
  call.emit('error', notLeader(leader));
}

/**
 * The connection string of a cluster given by its nodes as seeds: the client then asks their gossip
 * for the leader, at connection and after each reconnection (client 6.2.1 Client/index.ts lines
 * 267-284 and 594-619, Client/discovery.ts lines 19-79).
 */
export function seedsConnectionString(...nodes: ScriptedServer[]): string {
  return `esdb://${nodes.map((n) => `${n.endpoint.host}:${n.endpoint.port}`).join(',')}?tls=false`;
}

/**
 * A Gossip.Read answer: each member's state, liveness and HTTP (gRPC) endpoint
 * (src/EventStore.Core/Services/Transport/Grpc/Gossip.Read.cs v24.10.6 lines 40-53).
 */
function clusterInfo(members: Member[]): ClusterInfo {
  const states = { leader: MemberInfo.VNodeState.LEADER, follower: MemberInfo.VNodeState.FOLLOWER, unknown: MemberInfo.VNodeState.UNKNOWN };
  return new ClusterInfo().setMembersList(
    members.map((m) =>
      new MemberInfo()
        .setInstanceId(new UUID().setString(randomUUID()))
        .setTimeStamp(String(Date.now()))
        .setState(states[m.state])
        .setIsAlive(m.alive ?? true)
        .setHttpEndPoint(new GossipEndPoint().setAddress(m.endpoint.host).setPort(m.endpoint.port)),
    ),
  );
}

/**
 * Ends a call as a node with no leader does one that requires the leader: a node that lost its
 * quorum retires to Unknown and forgets the leader (ClusterVNodeController.cs v24.10.6 lines
 * 1124-1127 and 376-383); reads requiring the leader are then denied NotReady, not NotLeader
 * (lines 205-214 and 739-749; NotLeader only when a leader is known), which the gRPC layer throws as
 * UNAVAILABLE "Server Is Not Ready" (Enumerator.cs lines 28-33, Streams.Read.cs lines 87-88 and
 * 320-321, RpcExceptions.cs lines 16-17).
 */
export function failNotReady(call: ReadCall): void {
  call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'Server Is Not Ready', metadata: new grpc.Metadata() });
}

/**
 * What 24.10 lists for its streams methods, names lowercased: BatchAppend too, with the
 * `deadline_duration` feature (src/EventStore.Core/Services/Transport/Grpc/ServerFeatures.cs,
 * v24.10.4 lines 26-52), which the client's appendToStream would use and the adapter does not.
 */
function supportedMethods(): SupportedMethods {
  const method = (service: string, name: string, features: string[] = []) =>
    new SupportedMethod().setServiceName(service).setMethodName(name).setFeaturesList(features);
  return new SupportedMethods()
    .setEventStoreServerVersion('24.10.4')
    .setMethodsList([
      method('event_store.client.streams.streams', 'read', ['position', 'events']),
      method('event_store.client.streams.streams', 'append'),
      method('event_store.client.streams.streams', 'batchappend', ['deadline_duration']),
    ]);
}

export interface ScriptedEvent {
  streamId: string;
  revision: number;
  commit: bigint;
  prepare?: bigint;
  type?: string;
  data?: Record<string, unknown>;
  id?: string;
  metadata?: Record<string, unknown>;
  /** When the server recorded it (the client's recordedAt); unset: the moment it is read. */
  created?: Date;
}

/**
 * A record as the server sends it in a ReadResp: metadata type, created (ticks) and content-type,
 * data and custom metadata (src/EventStore.Core/Services/Transport/Grpc/Streams.Read.cs, v24.10.4
 * lines 321-366, ConvertToRecordedEvent and ConvertToReadEvent).
 */
function recordMessage(r: {
  id?: string;
  streamId: string;
  revision: string;
  commit: bigint;
  prepare: bigint;
  type: string;
  data: Buffer;
  metadata: Buffer;
  json: boolean;
  created?: Date;
}): ReadResp {
  const recorded = new ReadResp.ReadEvent.RecordedEvent()
    .setId(new UUID().setString(r.id ?? randomUUID()))
    .setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(r.streamId)))
    .setStreamRevision(r.revision)
    .setCommitPosition(String(r.commit))
    .setPreparePosition(String(r.prepare))
    .setData(r.data)
    .setCustomMetadata(r.metadata);
  recorded.getMetadataMap().set('type', r.type);
  // Ticks (100 ns) since the Unix epoch, not since .NET's year 1 (EpochExtensions.ToTicksSinceEpoch).
  recorded.getMetadataMap().set('created', String(BigInt((r.created ?? new Date()).getTime()) * 10_000n));
  recorded.getMetadataMap().set('content-type', r.json ? 'application/json' : 'application/octet-stream');
  const read = new ReadResp.ReadEvent().setEvent(recorded).setCommitPosition(String(r.commit));
  return new ReadResp().setEvent(read);
}

/** Where an event sits: its stream, revision and position. */
const placeOf = (e: ScriptedEvent) => ({
  id: e.id,
  streamId: e.streamId,
  revision: String(e.revision),
  commit: e.commit,
  prepare: e.prepare ?? e.commit,
  created: e.created,
});

/** An event of the service's: JSON data and the port's metadata. */
export function eventMessage(e: ScriptedEvent): ReadResp {
  return recordMessage({
    ...placeOf(e),
    type: e.type ?? 'SomethingHappened',
    data: Buffer.from(JSON.stringify(e.data ?? {})),
    metadata: Buffer.from(JSON.stringify(e.metadata ?? { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 })),
    json: true,
  });
}

/** The events of an append, as the log keeps them: revisions on from `revision`, positions on from `commit`. */
export function appendedEvents(request: AppendRequest, revision: number, commit: bigint): ScriptedEvent[] {
  return request.events.map((e, i) => ({ ...e, streamId: request.streamId, revision: revision + i, commit: commit + BigInt(i) }));
}

function appendRequest(call: AppendCall, messages: AppendReq[]): AppendRequest {
  const options = messages[0].getOptions()!;
  const revisions = AppendReq.Options.ExpectedStreamRevisionCase;
  const expected = {
    [revisions.REVISION]: () => Number(options.getRevision()),
    [revisions.ANY]: () => 'any' as const,
    [revisions.NO_STREAM]: () => 'no_stream' as const,
    [revisions.STREAM_EXISTS]: () => 'stream_exists' as const,
    [revisions.EXPECTED_STREAM_REVISION_NOT_SET]: () => {
      throw new Error('an append with no expected revision');
    },
  }[options.getExpectedStreamRevisionCase()]();
  return {
    call,
    streamId: Buffer.from(options.getStreamIdentifier()!.getStreamName_asU8()).toString(),
    expected,
    events: messages.slice(1).map((message) => {
      const m = message.getProposedMessage()!;
      return {
        id: m.getId()!.getString(),
        type: m.getMetadataMap().get('type'),
        data: JSON.parse(Buffer.from(m.getData_asU8()).toString()),
        metadata: JSON.parse(Buffer.from(m.getCustomMetadata_asU8()).toString()),
      };
    }),
  };
}

/** An event written to one of the service's streams by hand, as bytes: not JSON (content type application/octet-stream). */
export function handWrittenMessage(e: ScriptedEvent): ReadResp {
  return recordMessage({
    ...placeOf(e),
    type: e.type ?? 'CustomerCreated',
    data: Buffer.from('name=Ada'),
    metadata: Buffer.alloc(0),
    json: false,
  });
}

/**
 * The tombstone a hard delete writes into the stream, as a read of $all sends it: type
 * `$streamDeleted`, no data, not JSON, event number 2^63-1 (LogRecord.cs v24.10.4 lines 119-126,
 * StorageWriterService.cs lines 482-484, EventNumber.cs line 7; reads of $all keep it until a
 * scavenge: ReaderIndex/AllReader.cs lines 111-118; content type: Streams.Read.cs lines 340-342).
 */
export function tombstoneMessage(streamId: string, commit: bigint): ReadResp {
  const none = Buffer.alloc(0);
  return recordMessage({
    streamId,
    revision: String(2n ** 63n - 1n),
    commit,
    prepare: commit,
    type: '$streamDeleted',
    data: none,
    metadata: none,
    json: false,
  });
}

/**
 * Ends a read of a hard-deleted stream as the server does: status FAILED_PRECONDITION with the
 * `exception: stream-deleted` trailer (Streams.Read.cs v24.10.4 lines 304-305, RpcExceptions.cs
 * lines 68-73).
 */
export function failStreamDeleted(call: ReadCall, streamId: string): void {
  call.emit('error', streamDeleted(streamId));
}

function streamDeleted(streamId: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set('exception', 'stream-deleted');
  metadata.set('stream-name', streamId);
  return { code: grpc.status.FAILED_PRECONDITION, details: `Event stream '${streamId}' is deleted.`, metadata };
}

/** Streams.Read.cs v24.10.4 lines 262-266: the first message of a subscription. */
export const confirmationMessage = () => new ReadResp().setConfirmation(new ReadResp.SubscriptionConfirmation().setSubscriptionId(randomUUID()));

/** Streams.Read.cs v24.10.4 lines 267-272: a filtered subscription's checkpoint. */
export const checkpointMessage = (commit: bigint, prepare = commit) =>
  new ReadResp().setCheckpoint(new ReadResp.Checkpoint().setCommitPosition(String(commit)).setPreparePosition(String(prepare)));

/** Streams.Read.cs v24.10.4 lines 273-277: the answer to a read of a stream that does not exist. */
export const streamNotFoundMessage = (stream: string) =>
  new ReadResp().setStreamNotFound(new ReadResp.StreamNotFound().setStreamIdentifier(new StreamIdentifier().setStreamName(Buffer.from(stream))));

/** Streams.Read.cs v24.10.4 lines 278-280: sent when a subscription goes live. */
export const caughtUpMessage = () => new ReadResp().setCaughtUp(new ReadResp.CaughtUp());

export interface ReadRequest {
  /** A subscription; else a read with a count. */
  subscription: boolean;
  backwards: boolean;
  count: number;
  fromStart: boolean;
  from?: bigint;
  /** The stream read, when not $all. */
  stream?: string;
  /** Where a read of a stream starts: a revision, or its start or end. */
  streamFrom?: bigint | 'start' | 'end';
  /** A subscription's stream-name filter: its prefixes, or its regex. */
  prefixes: string[];
  regex?: string;
}

export function describeRead(call: ReadCall): ReadRequest {
  const options = call.request.getOptions()!;
  const all = options.getAll();
  const streamFilter = options.getFilter()?.getStreamIdentifier();
  const stream = options.getStream();
  return {
    subscription: options.hasSubscription(),
    backwards: options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS,
    count: Number(options.getCount() || '0'),
    fromStart: all?.hasStart() ?? false,
    from: all?.hasPosition() ? BigInt(all.getPosition()!.getCommitPosition()) : undefined,
    stream: stream ? Buffer.from(stream.getStreamIdentifier()!.getStreamName_asU8()).toString() : undefined,
    streamFrom: !stream ? undefined : stream.hasEnd() ? 'end' : stream.hasStart() ? 'start' : BigInt(stream.getRevision()),
    prefixes: streamFilter?.getPrefixList() ?? [],
    regex: streamFilter?.getRegex() || undefined,
  };
}

/**
 * Whether a subscription's filter lets a stream's events through, as the server decides it: by
 * prefix, else by regex (KurrentDB v24.10.6 src/EventStore.Core/Services/Storage/ReaderIndex/EventFilter.cs
 * lines 137-199, StreamIdPrefixStrategy and StreamIdRegexStrategy), else every stream.
 */
export function passesFilter(read: ReadRequest, streamId: string): boolean {
  if (read.prefixes.length > 0) return read.prefixes.some((p) => streamId.startsWith(p));
  return read.regex === undefined || new RegExp(read.regex).test(streamId);
}

/**
 * Answers a read of $all backwards with the events of `log` (newest first) before its position,
 * at most its count, and ends the call. The event at the position itself is left out, as the
 * server reads backwards from the record before it (KurrentDB v24.10.6
 * src/EventStore.Core/Services/Storage/ReaderIndex/AllReader.cs lines 204-254).
 */
export function answerReadBackwards(call: ReadCall, log: ScriptedEvent[]): void {
  const { count, from } = describeRead(call);
  const events = log.filter((e) => from === undefined || e.commit < from);
  for (const e of events.slice(0, count || events.length)) call.write(eventMessage(e));
  call.end();
}

/**
 * Answers a read of one stream from `log` as the server does: from its revision (the start, or its
 * end) on, forwards or backwards, at most its count (Streams.Read.cs v24.10.4 lines 106-134,
 * ReadReq.cs lines 16-21; Enumerator.ReadStreamForwards.cs lines 99-131 and
 * Enumerator.ReadStreamBackwards.cs lines 98-125 stop at the count), or "stream not found" when the
 * stream has no event (lines 133-136 and 122-125). Then it ends the call.
 */
export function answerStreamRead(call: ReadCall, log: ScriptedEvent[]): void {
  const { stream, streamFrom, backwards, count } = describeRead(call);
  const events = log.filter((e) => e.streamId === stream).sort((a, b) => (backwards ? b.revision - a.revision : a.revision - b.revision));
  if (events.length === 0) call.write(streamNotFoundMessage(stream!));
  const from = streamFrom === 'start' ? 0 : streamFrom === 'end' ? Infinity : Number(streamFrom);
  const sent = events.filter((e) => (backwards ? e.revision <= from : e.revision >= from));
  for (const e of sent.slice(0, count)) call.write(eventMessage(e));
  call.end();
}

/**
 * What the server throws for an append it gave up on, as when it stopped being the leader: its
 * pending requests are disposed as a commit timeout, "Request canceled by server"
 * (RequestManagementService.cs v24.10.6 lines 171-180, RequestManagerBase.cs lines 203-212), thrown
 * as status ABORTED (Streams.Append.cs lines 144-147, RpcExceptions.cs line 14), which the client
 * turns into TimeoutError.
 */
export const appendTimedOut = (): Partial<grpc.StatusObject> => ({
  code: grpc.status.ABORTED,
  details: 'Operation timed out: Request canceled by server',
  metadata: new grpc.Metadata(),
});

/**
 * A successful append (Streams.Append.cs v24.10.6 lines 124-142); with no commit, as an append
 * recognised as one already stored may be answered: NoPosition (line 132, for a commit position of -1).
 */
export function appendSuccess(revision: number, commit?: bigint): AppendResp {
  const success = new AppendResp.Success().setCurrentRevision(String(revision));
  if (commit === undefined) success.setNoPosition(new Empty());
  else success.setPosition(new AppendResp.Position().setCommitPosition(String(commit)).setPreparePosition(String(commit)));
  return new AppendResp().setSuccess(success);
}

/**
 * The answer to an append whose expected revision is not the stream's: a reply, not a status
 * (Streams.Append.cs v24.10.6 lines 149-183), here for a stream at `current` (-1: no stream).
 */
export function appendWrongExpectedVersion(request: AppendRequest, current: number): AppendResp {
  const wrong = new AppendResp.WrongExpectedVersion();
  if (typeof request.expected === 'number') wrong.setExpectedRevision(String(request.expected));
  else if (request.expected === 'no_stream') wrong.setExpectedNoStream(new Empty());
  else if (request.expected === 'any') wrong.setExpectedAny(new Empty());
  else wrong.setExpectedStreamExists(new Empty());
  if (current < 0) wrong.setCurrentNoStream(new Empty());
  else wrong.setCurrentRevision(String(current));
  return new AppendResp().setWrongExpectedVersion(wrong);
}

/**
 * What the server throws for an append it did not handle because it is starting or has no leader
 * (NotReady) or is overloaded (TooBusy): status UNAVAILABLE with only a message
 * (Streams.Append.cs v24.10.6 lines 110-113, RpcExceptions.cs lines 16-20 and 155-163).
 */
export const appendNotHandled = (reason: 'Server Is Not Ready' | 'Server Is Too Busy'): Partial<grpc.StatusObject> => ({
  code: grpc.status.UNAVAILABLE,
  details: reason,
  metadata: new grpc.Metadata(),
});

/**
 * What the server throws for an append to a hard-deleted stream: it refuses it as Deleted
 * (IndexWriter.cs v24.10.6 lines 183-184), thrown as FAILED_PRECONDITION with the
 * `exception: stream-deleted` trailer (Streams.Append.cs lines 185-186, RpcExceptions.cs lines
 * 67-72), which the client turns into StreamDeletedError.
 */
export function appendStreamDeleted(request: AppendRequest): Partial<grpc.StatusObject> {
  return streamDeleted(request.streamId);
}

/** An event to append: what it holds does not matter to the adapter's tests. */
export const newEvent = (): NewEvent => ({
  id: randomUUID(),
  type: 'SomethingHappened',
  data: {},
  metadata: { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 },
});

/**
 * What the adapter logs at warn and error, kept out of the run's output: the current test's lines,
 * in one array (emptied before each test), checked where a test expects a line.
 */
export function loggedLines(): string[] {
  const logged: string[] = [];
  beforeEach(() => {
    logged.length = 0;
    for (const level of ['warn', 'error'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation((...args: unknown[]) => void logged.push(`${level}: ${String(args[0])}`));
    }
  });
  afterEach(() => jest.restoreAllMocks());
  return logged;
}

/** A scripted endpoint that keeps a log in memory (see startInMemoryEventStoreDb). */
export interface InMemoryEventStoreDb extends ScriptedServer {
  /** Every event appended, in the log's order. */
  log: ScriptedEvent[];
}

/**
 * An endpoint that keeps a log in memory, as far as the service's adapter uses one: it stores the
 * appends it is sent (positions as byte offsets, far apart, as EventStoreDB's are), answers
 * reads of streams and of $all backwards from that log, and serves filtered subscriptions from it,
 * live ones included: each appended event is sent to every live subscription whose filter passes it,
 * as the server does. Scripted, not the server: no expected-revision checks, no deletes.
 */
export async function startInMemoryEventStoreDb(
  options: {
    /** Answers an append instead of the log, when it returns true. */
    append?: (request: AppendRequest, answer: AppendAnswer) => boolean;
    /** Answers a read instead of the log (or leaves it unanswered), when it returns true. */
    read?: (call: ReadCall, read: ReadRequest) => boolean;
    gossip?: Script['gossip'];
  } = {},
): Promise<InMemoryEventStoreDb> {
  const log: ScriptedEvent[] = [];
  const live: { call: ReadCall; read: ReadRequest }[] = [];
  let nextCommit = 10_000n;
  const server = await startScriptedEventStoreDb({
    read: (call) => {
      const read = describeRead(call);
      if (options.read?.(call, read)) return;
      if (read.stream !== undefined) return answerStreamRead(call, log);
      if (!read.subscription) return answerReadBackwards(call, [...log].reverse());
      call.write(confirmationMessage());
      const sent = log.filter((e) => (read.from === undefined || e.commit > read.from) && passesFilter(read, e.streamId));
      for (const e of sent) call.write(eventMessage(e));
      if (sent.length > 0) call.write(checkpointMessage(sent[sent.length - 1].commit));
      call.write(caughtUpMessage());
      live.push({ call, read });
      call.on('cancelled', () =>
        live.splice(
          live.findIndex((l) => l.call === call),
          1,
        ),
      );
    },
    gossip: options.gossip,
    append: (request, answer) => {
      if (options.append?.(request, answer)) return;
      const revision = log.filter((e) => e.streamId === request.streamId).length;
      const created = new Date();
      const events = appendedEvents(request, revision, nextCommit).map((e, i) => ({ ...e, commit: nextCommit + BigInt(i) * 137n, created }));
      nextCommit += BigInt(events.length) * 137n + 5_000n;
      log.push(...events);
      answer(null, appendSuccess(revision + events.length - 1, events[events.length - 1].commit));
      for (const { call: subscription, read } of live) {
        const matching = events.filter((e) => passesFilter(read, e.streamId));
        for (const e of matching) subscription.write(eventMessage(e));
        if (matching.length > 0) subscription.write(checkpointMessage(matching[matching.length - 1].commit));
      }
    },
  });
  return { ...server, log };
}
