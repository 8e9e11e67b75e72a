import type {
  AppendOutcome,
  AppendResult,
  EventBatch,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  StoredEvent,
  StreamAppend,
  SubscribeOptions,
} from '../event-store/event-store.port';
import type {
  Checkpoint,
  CollectionSchema,
  CollectionStatus,
  FindQuery,
  FindResult,
  ParkedChanges,
  ParkedStream,
  ParkRequest,
  ProjectionFailure,
  ReadDocument,
  ReadStore,
  SkippedEvent,
} from '../read-store/read-store.port';
import type { KeyStore } from '../key-store/key-store.port';
import type { WriteFailures } from '../storage/write-failures';
import type { Metrics } from '../metrics/metrics';
import { inSpan } from '../tracing/tracing';

/** A store's position as a span shows it. */
const position = (p: Position) => `${p.commit}/${p.prepare}`;

/** An event store that times each call and counts the events appended, around any adapter; its appends' failures go to readiness. */
export class InstrumentedEventStore implements EventStore {
  constructor(
    private readonly store: EventStore,
    private readonly metrics: Metrics,
    private readonly writes: WriteFailures,
  ) {}

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const attributes = () => ({ 'event_store.stream': streamId, 'event_store.expected_revision': String(expected), 'event_store.events': events.length });
    const result = await inSpan('event store append', attributes, async (span) => {
      const appended = await this.writes.watch('event store', () =>
        this.metrics.time(this.metrics.eventStoreDuration, 'appendToStream', () => this.store.appendToStream(streamId, events, expected)),
      );
      span?.setAttributes({ 'event_store.revision': appended.revision, 'event_store.position': position(appended.position) });
      return appended;
    });
    for (const event of events) this.metrics.eventsAppended.inc({ type: event.type });
    return result;
  }

  async appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]> {
    const outcomes = await inSpan(
      'event store append many',
      () => ({ 'event_store.streams': appends.length }),
      () =>
        this.writes.watch('event store', () =>
          this.metrics.time(this.metrics.eventStoreDuration, 'appendToStreams', () => this.store.appendToStreams(appends)),
        ),
    );
    appends.forEach(({ events }, i) => {
      if ('result' in outcomes[i]) for (const event of events) this.metrics.eventsAppended.inc({ type: event.type });
    });
    return outcomes;
  }

  readStream(streamId: string, fromRevision?: number, maxCount?: number): Promise<StoredEvent[]> {
    return inSpan(
      'event store read',
      () => ({ 'event_store.stream': streamId, 'event_store.from_revision': fromRevision ?? 0 }),
      () => this.metrics.time(this.metrics.eventStoreDuration, 'readStream', () => this.store.readStream(streamId, fromRevision, maxCount)),
    );
  }

  readLastEvent(streamId: string): Promise<StoredEvent | null> {
    return inSpan(
      'event store read last',
      () => ({ 'event_store.stream': streamId }),
      () => this.metrics.time(this.metrics.eventStoreDuration, 'readLastEvent', () => this.store.readLastEvent(streamId)),
    );
  }

  headPosition(): Promise<Position> {
    return this.metrics.time(this.metrics.eventStoreDuration, 'headPosition', () => this.store.headPosition());
  }

  eventsBetween(from: Position, to: Position): number | null {
    return this.store.eventsBetween(from, to);
  }

  /** Not timed: a subscription lasts as long as its projector. */
  subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    return this.store.subscribeToAll(from, options);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/** A read store that times each call, around any adapter; the failures of its commits and scrubs go to readiness. */
export class InstrumentedReadStore implements ReadStore {
  constructor(
    private readonly store: ReadStore,
    private readonly metrics: Metrics,
    private readonly writes: WriteFailures,
  ) {}

  ensureCollection(schema: CollectionSchema): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'ensureCollection', () => this.store.ensureCollection(schema));
  }

  getMany(collection: string, ids: string[], generation?: number): Promise<Map<string, ReadDocument>> {
    return this.metrics.time(this.metrics.readStoreDuration, 'getMany', () => this.store.getMany(collection, ids, generation));
  }

  get(collection: string, accountId: string, id: string): Promise<ReadDocument | null> {
    return inSpan(
      'read store get',
      () => ({ 'read_store.collection': collection }),
      () => this.metrics.time(this.metrics.readStoreDuration, 'get', () => this.store.get(collection, accountId, id)),
    );
  }

  oldest(collection: string, accountId: string): Promise<ReadDocument | null> {
    return this.metrics.time(this.metrics.readStoreDuration, 'oldest', () => this.store.oldest(collection, accountId));
  }

  pageById(collection: string, after: string, limit: number): Promise<ReadDocument[]> {
    return this.metrics.time(this.metrics.readStoreDuration, 'pageById', () => this.store.pageById(collection, after, limit));
  }

  find(collection: string, query: FindQuery): Promise<FindResult> {
    // The filters' names only: their values are personal data.
    const attributes = () => ({
      'read_store.collection': collection,
      'read_store.filters': Object.keys(query.filters).join(','),
      'read_store.limit': query.limit,
    });
    return inSpan('read store find', attributes, () => this.metrics.time(this.metrics.readStoreDuration, 'find', () => this.store.find(collection, query)));
  }

  commit(collection: string, documents: ReadDocument[], checkpoint: Checkpoint, parked?: ParkedChanges): Promise<void> {
    const attributes = () => ({
      'read_store.collection': collection,
      'read_store.documents': documents.length,
      'read_store.position': position(checkpoint.position),
    });
    return inSpan('read store commit', attributes, () =>
      this.writes.watch('read store', () =>
        this.metrics.time(this.metrics.readStoreDuration, 'commit', () => this.store.commit(collection, documents, checkpoint, parked)),
      ),
    );
  }

  recordFailure(collection: string, generation: number, failure: ProjectionFailure): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'recordFailure', () => this.store.recordFailure(collection, generation, failure));
  }

  parked(collection: string, generation: number, limit?: number): Promise<ParkedStream[]> {
    return this.metrics.time(this.metrics.readStoreDuration, 'parked', () => this.store.parked(collection, generation, limit));
  }

  parkedCount(collection: string, generation: number): Promise<{ streams: number; events: number }> {
    return this.metrics.time(this.metrics.readStoreDuration, 'parkedCount', () => this.store.parkedCount(collection, generation));
  }

  requestParked(collection: string, generation: number, streamIds: string[] | 'all', request: ParkRequest): Promise<string[]> {
    return this.metrics.time(this.metrics.readStoreDuration, 'requestParked', () => this.store.requestParked(collection, generation, streamIds, request));
  }

  parkedRequests(collection: string, generation: number): Promise<number> {
    return this.metrics.time(this.metrics.readStoreDuration, 'parkedRequests', () => this.store.parkedRequests(collection, generation));
  }

  skipped(collection: string): Promise<(SkippedEvent & { generation: number })[]> {
    return this.metrics.time(this.metrics.readStoreDuration, 'skipped', () => this.store.skipped(collection));
  }

  status(collection: string): Promise<CollectionStatus> {
    return this.metrics.time(this.metrics.readStoreDuration, 'status', () => this.store.status(collection));
  }

  fingerprint(collection: string, generation: number): Promise<string | null> {
    return this.metrics.time(this.metrics.readStoreDuration, 'fingerprint', () => this.store.fingerprint(collection, generation));
  }

  startRebuild(collection: string): Promise<number> {
    return this.metrics.time(this.metrics.readStoreDuration, 'startRebuild', () => this.store.startRebuild(collection));
  }

  promote(collection: string, generation: number): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'promote', () => this.store.promote(collection, generation));
  }

  abandonRebuild(collection: string, generation: number): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'abandonRebuild', () => this.store.abandonRebuild(collection, generation));
  }

  erase(collection: string, ids: string[]): Promise<void> {
    return this.writes.watch('read store', () => this.metrics.time(this.metrics.readStoreDuration, 'erase', () => this.store.erase(collection, ids)));
  }

  dropRetired(collection: string, graceMs: number): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'dropRetired', () => this.store.dropRetired(collection, graceMs));
  }

  acquireLease(name: string, holder: string, ttlMs: number, replacing?: string): Promise<string> {
    return this.metrics.time(this.metrics.readStoreDuration, 'acquireLease', () => this.store.acquireLease(name, holder, ttlMs, replacing));
  }

  releaseLease(name: string, holder: string): Promise<void> {
    return this.metrics.time(this.metrics.readStoreDuration, 'releaseLease', () => this.store.releaseLease(name, holder));
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/** The key store with its writes (a key made, destroyed, an erasure finished) watched by `writes`, and traced. */
export function watchingWrites(store: KeyStore, writes: WriteFailures): KeyStore {
  return {
    name: store.name,
    file: store.file,
    obtain: (keyId, options) =>
      inSpan(
        'key store obtain',
        () => ({ 'key_store.key': keyId }),
        () => writes.watch('key store', () => store.obtain(keyId, options)),
      ),
    getMany: (keyIds) =>
      inSpan(
        'key store read',
        () => ({ 'key_store.keys': keyIds.length }),
        () => store.getMany(keyIds),
      ),
    destroyedAmong: (keyIds) =>
      inSpan(
        'key store read',
        () => ({ 'key_store.keys': keyIds.length }),
        () => store.destroyedAmong(keyIds),
      ),
    destroy: (keyId, erasedBy) =>
      inSpan(
        'key store destroy',
        () => ({ 'key_store.key': keyId }),
        () => writes.watch('key store', () => store.destroy(keyId, erasedBy)),
      ),
    pendingErasures: (prefix) => store.pendingErasures(prefix),
    finishErasure: (keyId) => writes.watch('key store', () => store.finishErasure(keyId)),
    reopenErasure: (keyId, erasedBy) => writes.watch('key store', () => store.reopenErasure(keyId, erasedBy)),
    close: () => store.close(),
  };
}
