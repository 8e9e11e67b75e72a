import type { Statement } from 'better-sqlite3';
import { siblings } from '../instance';
import { SqliteDatabase, TEXT_KEY, WalSync } from '../storage/sqlite-database';
import { sqliteFailure } from '../storage/store-unavailable.error';
import {
  AppendOutcome,
  AppendResult,
  asUnreadable,
  EventBatch,
  EventMetadata,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  SEALED_SCHEMA_VERSION,
  START,
  storedMetadata,
  StoredEvent,
  StreamAppend,
  SubscribeOptions,
  UnreadableEventError,
  WrongExpectedRevisionError,
} from './event-store.port';

/** An events row as SQLite returns it. */
export interface EventRow {
  global_position: number;
  event_id: string;
  stream_id: string;
  stream_revision: number;
  type: string;
  data: string;
  metadata: string;
  recorded_at: number;
}

/** An event as the reads fetch it: an array, cheaper to build than an object per row (replays read millions). */
type EventTuple = [
  globalPosition: number,
  eventId: string,
  streamId: string,
  streamRevision: number,
  type: string,
  data: string,
  metadata: string,
  recordedAt: number,
];
const EVENT_COLUMNS = 'global_position, event_id, stream_id, stream_revision, type, data, metadata, recorded_at';

const DEFAULT_BATCH = 1000;
const SEALED_SINCE = SEALED_SCHEMA_VERSION;

interface PendingAppend extends StreamAppend {
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Event store on the embedded SQLite file. The primary key gives the global order, the unique
 * (stream_id, stream_revision) index guarantees one event per revision even across processes, and
 * appends run in an IMMEDIATE transaction so the revision check and the insert cannot interleave.
 *
 * Group commit: the appends asked for within one turn of the event loop share one transaction.
 * Each runs in its own savepoint, checked against its own expected revision (and seeing the appends
 * before it in the group), and each caller hears of its own append only once the whole group is on
 * disk.
 *
 * On a durable connection the WAL is synced off the event loop (WalSync); groups committed while a
 * sync runs share the next one. An append is answered, and an event handed to a subscriber (so to
 * the read models), only once the WAL holding it is synced: a 2xx, or a read showing a write,
 * survives a crash or power loss. One sync of the file covers every process's commits in it, so
 * events other processes appended are synced here too before they are folded.
 */
export class SqliteEventStore implements EventStore {
  private readonly wakeUps = new Set<() => void>();
  private readonly appendGroup: (group: StreamAppend[]) => AppendOutcome[];
  private pending: PendingAppend[] = [];
  private readonly selectStream: Statement<[string, number, number], EventTuple>;
  private readonly selectLast: Statement<[string], EventTuple>;
  /**
   * The events after a position, by batch size. The size is written into each statement, not bound:
   * better-sqlite3 builds SQLite with STAT4, which plans a statement with a bound LIMIT again on every
   * run, and an idle subscriber runs this one every pollIntervalMs.
   */
  private readonly selectAfter = new Map<number, Statement<[number], EventTuple>>();
  private readonly selectHead: Statement<[], { pos: number | null }>;
  private readonly selectPlaintext: Statement<[number, number], EventTuple>;
  private readonly replaceOne: Statement<[string, string, number]>;
  /** Syncs the WAL off the event loop; undefined on a connection that is not durable. */
  private readonly walSync?: WalSync;
  /** Stops hearing of other workers' appends. */
  private readonly unhear: () => void;

  /**
   * @param pollIntervalMs how often a subscriber looks for events appended by other processes (other
   * workers or instances on the same file): one indexed read, so often enough that a write made
   * there reaches this process's read models about as soon as one made here.
   */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly pollIntervalMs = 10,
  ) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        global_position INTEGER PRIMARY KEY AUTOINCREMENT,
        event_id        TEXT    NOT NULL UNIQUE,
        stream_id       TEXT    NOT NULL,
        stream_revision INTEGER NOT NULL,
        type            TEXT    NOT NULL,
        data            TEXT    NOT NULL,
        metadata        TEXT    NOT NULL,
        recorded_at     INTEGER NOT NULL,
        UNIQUE (stream_id, stream_revision)
      );
    `);
    const selectLastRevision = db.prepare<[string], { rev: number | null }>(`SELECT max(stream_revision) AS rev FROM events WHERE stream_id = ${TEXT_KEY}`);
    const selectById = db.prepare<[string], EventRow>('SELECT * FROM events WHERE event_id = ?');
    const insert = db.prepare(
      `INSERT INTO events (event_id, stream_id, stream_revision, type, data, metadata, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    // A new stream's one event, inserted unless its id or its stream's first revision is taken.
    const insertFirst = db.prepare(
      `INSERT OR IGNORE INTO events (event_id, stream_id, stream_revision, type, data, metadata, recorded_at)
       VALUES (?, ?, 0, ?, ?, ?, ?)`,
    );
    // A range of revisions rather than a LIMIT (a stream's revisions have no gaps): STAT4 plans a
    // bound LIMIT again on every run, and a write's fold runs this one.
    this.selectStream = db
      .prepare<[string, number, number], EventTuple>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ${TEXT_KEY} AND stream_revision >= ? AND stream_revision < ? ORDER BY stream_revision`,
      )
      .raw();
    this.selectLast = db
      .prepare<[string], EventTuple>(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ${TEXT_KEY} ORDER BY stream_revision DESC LIMIT 1`)
      .raw();
    this.selectHead = db.prepare('SELECT max(global_position) AS pos FROM events');
    this.selectPlaintext = db
      .prepare<[number, number], EventTuple>(
        `SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > ? AND json_extract(metadata, '$.schemaVersion') < ${SEALED_SINCE}
         ORDER BY global_position LIMIT ?`,
      )
      .raw();
    this.replaceOne = db.prepare(
      `UPDATE events SET data = ?, metadata = ? WHERE global_position = ? AND json_extract(metadata, '$.schemaVersion') < ${SEALED_SINCE}`,
    );

    const appendOne = (streamId: string, events: NewEvent[], expected: ExpectedRevision): AppendResult => {
      if (expected === 'no_stream' && events.length === 1) {
        // A new record's create (a bulk import's every row) in one statement: the looks below only
        // when it is refused (a retry of this very append, or a stream that exists).
        const [event] = events;
        const info = insertFirst.run(event.id, streamId, event.type, JSON.stringify(event.data), JSON.stringify(storedMetadata(event.metadata)), Date.now());
        if (info.changes === 1) return { revision: 0, position: toPosition(Number(info.lastInsertRowid)) };
      }
      // A retried append of events already stored (same ids) answers as the first one did.
      const earlier = selectById.get(events[0].id);
      if (earlier && earlier.stream_id === streamId) {
        const last = selectById.get(events[events.length - 1].id) ?? earlier;
        return { revision: last.stream_revision, position: toPosition(last.global_position) };
      }
      const current = selectLastRevision.get(streamId)?.rev ?? null;
      const matches = expected === 'any' || (expected === 'no_stream' ? current === null : current === expected);
      if (!matches) throw new WrongExpectedRevisionError(streamId, expected, current ?? 'no_stream');
      const now = Date.now();
      let revision = current ?? -1;
      let position = 0;
      for (const event of events) {
        revision += 1;
        const info = insert.run(event.id, streamId, revision, event.type, JSON.stringify(event.data), JSON.stringify(storedMetadata(event.metadata)), now);
        position = Number(info.lastInsertRowid);
      }
      return { revision, position: toPosition(position) };
    };
    // Nested in the group's transaction, appendTx runs as a savepoint: a refused append leaves nothing.
    const appendTx = db.transaction(appendOne);
    const groupTx = db.transaction((group: StreamAppend[]) =>
      group.map(({ streamId, events, expected }) => {
        try {
          // One event needs no savepoint (two statements run through exec, a third of a bulk
          // import's time): it is refused before its one insert, and an insert that fails leaves
          // nothing of itself (SQLite undoes a failed statement, the transaction goes on).
          return { result: events.length === 1 ? appendOne(streamId, events, expected) : appendTx(streamId, events, expected) };
        } catch (error) {
          return { error };
        }
      }),
    );
    this.appendGroup = (group) => groupTx.immediate(group);

    // Read when a sync starts: what is committed by then, in any process, is what it makes durable.
    this.walSync = WalSync.forDurable(db, () => this.selectHead.get()?.pos ?? 0);
    // Another worker's appends are looked for at once, not at the next poll.
    this.unhear = siblings.hear('appended', () => this.wakeSubscribers());
  }

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('appendToStream needs at least one event');
    return new Promise((resolve, reject) => {
      this.pending.push({ streamId, events, expected, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => void this.commitPending());
    });
  }

  /** In one transaction, as a group of appendToStream's: no promise nor pending entry per append. */
  async appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]> {
    if (appends.some((a) => a.events.length === 0)) throw new Error('appendToStreams needs at least one event in each append');
    return this.commitGroup(appends);
  }

  /** Commits every append asked for since the last group, then answers each once it is on disk. */
  private async commitPending(): Promise<void> {
    const group = this.pending;
    this.pending = [];
    const outcomes = await this.commitGroup(group);
    group.forEach((append, i) => {
      const outcome = outcomes[i];
      if ('result' in outcome) append.resolve(outcome.result);
      else append.reject(outcome.error);
    });
  }

  /**
   * Commits a group of appends in one transaction, each in its own savepoint where it needs one;
   * resolves once it is on disk. The transaction failed (busy, disk, closed): nothing of the group
   * was stored. Or its sync failed: what was stored may not survive a crash, so no append of the
   * group is confirmed. Either way every append's outcome is that failure.
   */
  private async commitGroup(group: StreamAppend[]): Promise<AppendOutcome[]> {
    let outcomes: AppendOutcome[];
    try {
      outcomes = this.appendGroup(group);
      let last = 0;
      for (const o of outcomes) if ('result' in o) last = Math.max(last, Number(o.result.position.commit));
      await this.durableUpTo(last);
    } catch (error) {
      const failure = sqliteFailure(error);
      return group.map(() => ({ error: failure }));
    }
    this.wakeSubscribers();
    siblings.tell(
      'appended',
      group.filter((_, i) => 'result' in outcomes[i]).map((append) => append.streamId),
    );
    return outcomes.map((o) => ('error' in o ? { error: sqliteFailure(o.error) } : o));
  }

  /** Resolves once every event up to `position` is on disk (one sync of the file covers every process's commits). */
  private async durableUpTo(position: number): Promise<void> {
    await this.walSync?.upTo(position);
  }

  async readStream(streamId: string, fromRevision = 0, maxCount = Number.MAX_SAFE_INTEGER): Promise<StoredEvent[]> {
    return this.selectStream.all(streamId, fromRevision, Math.min(fromRevision + maxCount, Number.MAX_SAFE_INTEGER)).map(toStoredEvent);
  }

  async readLastEvent(streamId: string): Promise<StoredEvent | null> {
    const row = this.selectLast.get(streamId);
    return row ? toStoredEvent(row) : null;
  }

  async headPosition(): Promise<Position> {
    const pos = this.selectHead.get()?.pos;
    return pos == null ? START : toPosition(pos);
  }

  /** Exact: a position is the event's sequence number, counted from 1 (START is before it). */
  eventsBetween(from: Position, to: Position): number {
    return Math.max(0, Number(to.commit - (from.commit < 0n ? 0n : from.commit)));
  }

  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    const selectAfter = this.selectAfterBy(options.maxBatchSize ?? DEFAULT_BATCH);
    let after = Number(from.commit);
    while (!options.signal.aborted) {
      const rows = selectAfter.all(after);
      if (rows.length === 0) {
        await this.nextAppend(options.signal);
        continue;
      }
      after = rows[rows.length - 1][0];
      // Events committed but not yet synced (another process's, or a group of this one's whose sync
      // is under way) are handed on once a sync here has made them durable.
      await this.durableUpTo(after);
      const prefixes = options.streamPrefixes ?? [];
      const events = (prefixes.length === 0 ? rows : rows.filter((r) => prefixes.some((p) => r[2].startsWith(p)))).map(toSubscribedEvent);
      yield { events, position: toPosition(after) };
    }
  }

  private selectAfterBy(batchSize: number): Statement<[number], EventTuple> {
    if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new Error(`A batch size must be a whole number above 0, not ${batchSize}`);
    let statement = this.selectAfter.get(batchSize);
    if (!statement) {
      statement = this.db
        .prepare<[number], EventTuple>(`SELECT ${EVENT_COLUMNS} FROM events WHERE global_position > ? ORDER BY global_position LIMIT ${batchSize}`)
        .raw();
      this.selectAfter.set(batchSize, statement);
    }
    return statement;
  }

  /**
   * Whether events written before record values were sealed (schema version 1) may be left, and
   * a page of them after `after` (a global position). Only sealPlaintextEvents uses these: the one
   * time the service rewrites events, because the embedded file is its own.
   */
  get mayHoldPlaintext(): boolean {
    return this.db.pragma('user_version', { simple: true }) === 0;
  }

  plaintextEvents(after: number, limit: number): StoredEvent[] {
    return this.selectPlaintext.all(after, limit).map(toStoredEvent);
  }

  /** Replaces events' data and metadata in one transaction; secure deletion zeroes the old content. */
  replacePlaintext(events: StoredEvent[]): void {
    this.db.transaction(() => {
      for (const e of events) this.replaceOne.run(JSON.stringify(e.data), JSON.stringify(e.metadata), Number(e.position.commit));
    })();
  }

  /**
   * Every event is sealed now: later starts skip the search. The log may still hold frames of the
   * rows as they were; where the read models are in SQLite too, every erasure truncates it before it
   * answers, so none outlives the next one.
   * (Not truncated here: with WORKERS, the workers start together, and one's truncation would wait
   * on the others' reads.)
   */
  markSealed(): void {
    this.db.pragma(`user_version = ${SEALED_SINCE}`);
  }

  /** Closes the connection this store was given. */
  async close(): Promise<void> {
    this.unhear();
    this.wakeSubscribers();
    await this.walSync?.close();
    this.db.close();
  }

  private wakeSubscribers(): void {
    for (const wake of [...this.wakeUps]) wake();
  }

  /** Resolves on this process's next append, after the poll interval, or on abort. */
  private nextAppend(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUps.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.pollIntervalMs);
      this.wakeUps.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}

function toPosition(globalPosition: number): Position {
  const p = BigInt(globalPosition);
  return { commit: p, prepare: p };
}

/** A row as an event; one whose JSON does not parse (changed by hand) is unreadable (UnreadableEventError). */
function toStoredEvent([globalPosition, id, streamId, revision, type, data, metadata, recordedAt]: EventTuple): StoredEvent {
  try {
    // One literal, fields in one order: every event of one shape, none copied (each is read once per subscriber).
    return {
      id,
      streamId,
      revision,
      position: toPosition(globalPosition),
      type,
      data: JSON.parse(data) as StoredEvent['data'],
      metadata: JSON.parse(metadata) as EventMetadata,
      recordedAt: new Date(recordedAt),
    };
  } catch (error) {
    throw new UnreadableEventError(streamId, revision, `its JSON does not parse (${(error as Error).message})`);
  }
}

/** As toStoredEvent, but one it cannot read comes as such (asUnreadable), for the subscriber to park. */
function toSubscribedEvent(row: EventTuple): StoredEvent {
  try {
    return toStoredEvent(row);
  } catch (error) {
    const [globalPosition, id, streamId, revision, type, , , recordedAt] = row;
    return asUnreadable(
      { id, streamId, revision, position: toPosition(globalPosition), type, recordedAt: new Date(recordedAt) },
      (error as UnreadableEventError).reason,
    );
  }
}
