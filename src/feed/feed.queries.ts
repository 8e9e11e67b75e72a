import { Inject } from '@nestjs/common';
import { IQueryHandler, Query, QueryHandler } from '@nestjs/cqrs';
import { recordHistory, type HistoryEntry } from '../audit/record-history';
import { feedDataSchemaOf } from '../docs/feed-entry';
import { comparePositions, EVENT_STORE, EventStore, Position, UnreadableEventError } from '../event-store/event-store.port';
import { ProjectionsService } from '../projections/projections.service';
import { DATA_KEYS, type DataKeys } from '../sealing/data-keys';
import { READ_STORE, ReadDocuments } from '../read-store/read-store.port';
import { RecordKind, recordIdOf, streamIdOf } from '../records/record';
import { RecordSnapshots } from '../records/record-snapshots';
import { linkCurrentSpanTo } from '../tracing/tracing';
import { FeedCursorSecret } from './feed-cursor-secret';
import { FeedTail } from './feed-tail';
import { entryRefOf, FEED, FeedEntryRef } from './feed.projection';

/** The record kinds the feed tells of. */
export const FEED_KINDS = Symbol('FeedKinds');

/** One entry of the change feed: a CloudEvents 1.0 event in JSON (docs/api.md "Change feed"). */
export interface FeedEntry {
  specversion: '1.0';
  /** The entry's cursor: `after` it, the feed goes on with the next entry. */
  id: string;
  source: string;
  /** `customer.created`, `profile.erased`, ... */
  type: string;
  /** The record's id. */
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  /** The shape of `data` and its version (feedDataSchemaOf). */
  dataschema: string;
  data: { revision: number; changes: HistoryEntry['changes']; imported?: HistoryEntry['imported'] };
}

export interface FeedPage {
  entries: FeedEntry[];
  /** Where the next page starts: the last entry's cursor, or the one asked for when there is none. */
  next: Position;
}

export class FeedPageQuery extends Query<FeedPage> {
  constructor(
    readonly accountId: string,
    readonly after: Position,
    readonly limit: number,
  ) {
    super();
  }
}

/**
 * Streams read at once, for all pages together: on EventStoreDB each is a request in flight on the
 * one connection, whose server takes 100 at once by default and the client queues the rest, with
 * their deadlines running (a read queued past STORE_TIMEOUT_MS is taken for a stuck server).
 */
const READS_AT_ONCE = 32;

/**
 * A page of the account's changes: the index's documents after the cursor (one seek, whatever the
 * cursor's depth), up to the index's checkpoint, then each record's events read from the event
 * store, opened with its key, and told as its history tells them (recordHistory): `changes` from
 * the record's fold before the page's first event of it (RecordSnapshots: a bounded read), every
 * value null once the record is erased.
 */
@QueryHandler(FeedPageQuery)
export class FeedPageHandler implements IQueryHandler<FeedPageQuery, FeedPage> {
  private readonly snapshots: RecordSnapshots;
  private readonly reads = new Limiter(READS_AT_ONCE);

  constructor(
    @Inject(READ_STORE) private readonly readStore: ReadDocuments,
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(FEED_KINDS) private readonly kinds: RecordKind[],
    private readonly tail: FeedTail,
    private readonly secret: FeedCursorSecret,
    private readonly projections: ProjectionsService,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {
    this.snapshots = new RecordSnapshots(eventStore);
  }

  async execute({ accountId, after, limit }: FeedPageQuery): Promise<FeedPage> {
    // Until the index has reached the events stored before the start, a page would skip changes that exist.
    this.projections.assertCaughtUp(FEED);
    const cursors = await this.secret.cursors();
    const bound = await this.tail.bound();
    const { documents } = await this.readStore.find(FEED, {
      accountId,
      filters: {},
      order: 'oldest',
      offset: 0,
      limit,
      after: Number(after.prepare),
      count: false,
    });
    const refs = documents.map(entryRefOf).filter((ref) => comparePositions(ref.position, bound) <= 0);
    // A stream's entries in a page are a run of consecutive revisions: the index holds every event of every record stream.
    const runs = new Map<string, FeedEntryRef[]>();
    for (const ref of refs) {
      const run = runs.get(ref.streamId);
      if (run) run.push(ref);
      else runs.set(ref.streamId, [ref]);
    }
    // Erased records, by their destroyed keys (a record's key is its stream's id): one read for the
    // page, before any value is opened, as history reads the erasure first. A key destroyed by an
    // erasure whose event is not appended yet counts too: the values are gone either way.
    const keys = await this.keys.store.getMany([...runs.keys()]);
    const told = new Map<string, FeedEntry>();
    await this.reads.forEach([...runs.values()], async (run) => {
      const kind = this.kindOf(run[0].streamId);
      const byRevision = new Map(run.map((ref) => [ref.revision, ref]));
      for (const entry of await this.historyOf(kind, run, keys.get(run[0].streamId) === null)) {
        // By revision: a stream EventStoreDB truncated ($tb, $maxCount) gives fewer events than asked, from later on.
        const ref = byRevision.get(entry.revision);
        if (!ref) continue;
        told.set(`${ref.streamId}@${ref.revision}`, {
          specversion: '1.0',
          id: cursors.seal(accountId, ref.position),
          source: `/v1/${kind.streamPrefix}s`,
          type: `${kind.streamPrefix}.${verbOf(kind, entry.event, ref)}`,
          subject: recordIdOf(kind, ref.streamId),
          time: entry.occurred,
          datacontenttype: 'application/json',
          dataschema: feedDataSchemaOf(kind.streamPrefix),
          data: { revision: entry.revision, changes: entry.changes, ...(entry.imported ? { imported: entry.imported } : {}) },
        });
      }
    });
    // An entry whose event is gone (deleted by hand in EventStoreDB, with its stream or by truncation:
    // reads go to the leader, so not one that lags) is left out; the cursor still moves past it.
    const entries = refs.flatMap((ref) => told.get(`${ref.streamId}@${ref.revision}`) ?? []);
    return { entries, next: refs.length > 0 ? refs[refs.length - 1].position : after };
  }

  /** The run's events as history entries, in its order. */
  private async historyOf(kind: RecordKind, run: FeedEntryRef[], erased: boolean): Promise<HistoryEntry[]> {
    const { streamId } = run[0];
    const from = run[0].revision;
    const events = await this.eventStore.readStream(streamId, from, run.length);
    if (events.length === 0) return [];
    // The page's span links to the requests that appended what it serves.
    linkCurrentSpanTo(events.map((e) => e.metadata.traceparent));
    let before = null;
    if (!erased && from > 0) {
      const [created] = await this.eventStore.readStream(streamId, 0, 1);
      before = await this.snapshots.foldUpTo(kind, created, from - 1);
    }
    return recordHistory(kind, events, before, erased);
  }

  private kindOf(streamId: string): RecordKind {
    const kind = this.kinds.find((k) => streamId.startsWith(streamIdOf(k, '')));
    if (!kind) throw new Error(`The feed's index names ${streamId}, which is no record's stream`);
    return kind;
  }
}

/**
 * `created`, `updated`, `deleted` or `erased`: the entry's type after the kind. An event of a type
 * this version does not know (a newer one's, or written by hand) is unreadable to it: the page
 * answers 503 rather than leave the entry out for good.
 */
function verbOf(kind: RecordKind, eventType: string, ref: FeedEntryRef): string {
  const verb = (Object.keys(kind.events) as (keyof RecordKind['events'])[]).find((k) => kind.events[k] === eventType);
  if (!verb) throw new UnreadableEventError(ref.streamId, ref.revision, `its type ${eventType} is not one of ${kind.label}'s`);
  return verb;
}

/** Runs tasks at most `atOnce` at a time, across every caller. */
class Limiter {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly atOnce: number) {}

  /** Runs `task` on every item; once one fails, starts no more of them and rejects. */
  async forEach<T>(items: T[], task: (item: T) => Promise<void>): Promise<void> {
    let failed = false;
    await Promise.all(
      items.map((item) =>
        this.run(async () => {
          if (failed) return;
          await task(item).catch((error: unknown) => {
            failed = true;
            throw error;
          });
        }),
      ),
    );
  }

  private async run(task: () => Promise<void>): Promise<void> {
    if (this.running >= this.atOnce) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.running++;
    try {
      await task();
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }
}
