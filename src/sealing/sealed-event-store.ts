import {
  asUnreadable,
  RecordErasedError,
  type AppendOutcome,
  type AppendResult,
  type EventBatch,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  SEALED_SCHEMA_VERSION,
  type StoredEvent,
  type StreamAppend,
  type SubscribeOptions,
} from '../event-store/event-store.port';
import { StoreUnavailableError } from '../storage/store-unavailable.error';
import { DataKeys, keyObject, keyObjectsOnce, openOrNull, seal } from './data-keys';
import { OpeningThread } from './opening-thread';

/** Sealed events whose records' keys the key store does not have: not there yet, or lost. */
export class MissingKeysError extends StoreUnavailableError {
  constructor(
    store: StoreUnavailableError['store'],
    readonly keyIds: string[],
  ) {
    super(store, `no data key for ${keyIds.join(', ')}, whose events are sealed: not there yet`);
    this.name = 'MissingKeysError';
  }
}

/**
 * How long a subscription waits for a missing key (a key made on another instance may show late
 * where this read goes) before it hands over the events that need it as unreadable, to be parked.
 */
export const MISSING_KEY_GRACE_MS = 60_000;

/** What sealing needs of a kind of record (records/record.ts's RecordKind is one). */
export interface SealedKind {
  label: string;
  streamPrefix: string;
  events: { erased: string };
}

const SNAPSHOTS = 'snapshot-';

/**
 * The stream holding snapshots of a record stream's fold (src/records/record-snapshots.ts). Its id is
 * outside every kind's prefix, so projectors never fold it; its values are sealed with the record's key.
 */
export const snapshotStreamOf = (streamId: string) => SNAPSHOTS + streamId;

/** The record stream whose data key seals a stream's values: its own, or the one a snapshot stream follows. */
const keyStreamOf = (streamId: string) => (streamId.startsWith(SNAPSHOTS) ? streamId.slice(SNAPSHOTS.length) : streamId);

/**
 * A record event's data as stored from schema version 2 on: the names of the fields it carries,
 * in plain (history shows which fields an event changed, even after erasure), and their values
 * sealed with the record's key, as one JSON array in the order of `fields`.
 */
interface SealedData {
  fields: string[];
  sealed: string;
}

/** The version says how to read the data, so it is this store's to set, whatever the caller said. */
export const versioned = <E extends { metadata: object }>(event: E): E => ({ ...event, metadata: { ...event.metadata, schemaVersion: SEALED_SCHEMA_VERSION } });

/** Batches a subscription reads and opens ahead of the one its caller folds. */
const READ_AHEAD = 2;

/** Batches of at least this many new records (a bulk import's) have their keys made and their values sealed in the worker thread. */
const SEAL_IN_THREAD_FROM = 256;

/** Batches with at least this many sealed values are opened in the worker thread; smaller ones (a live projector's) at once. */
const OPEN_IN_THREAD_FROM = 256;

/**
 * Values of events appended here kept for this process's subscriptions at most (see `appendedHere`):
 * a bulk import's batches in flight and the fold following them (cli/import-fold.ts).
 */
export const APPENDED_KEPT = 50_000;

/** What is sealed of an event's data: its values, as one JSON array in the order of its fields. */
export const plainValues = (data: Record<string, unknown>): string => JSON.stringify(Object.keys(data).map((f) => data[f]));

const isSealed = (event: StoredEvent) =>
  event.metadata.schemaVersion >= SEALED_SCHEMA_VERSION && typeof (event.data as Partial<SealedData>).sealed === 'string';

/**
 * The event store as the rest of the service sees it: the field values of every record event
 * (`profile-<id>`, `customer-<id>`) are sealed with that record's data key on the way in and opened
 * on the way out, so nothing else handles ciphertext. The key id is the stream id; a record's
 * snapshot stream (`snapshot-<stream id>`) is sealed with its record's key, so an erasure makes its
 * snapshots unreadable too. Metadata, types, ids and other streams stay plain.
 *
 * Once a record's key is destroyed its events open with every value '' (field names kept): folds,
 * rebuilds and history go on, with nothing left to show. Reading a record's erasure event makes
 * this process forget the key it may have cached. A sealed event whose key the key store does not
 * have is unavailable (MissingKeysError: the read, or the projector's subscription, is tried
 * again), never read as erased: a key made on another instance may not show yet where this read
 * goes. A subscription hands such events over as unreadable once the key has stayed missing for
 * MISSING_KEY_GRACE_MS (see openSubscribed).
 */
export class SealedEventStore implements EventStore {
  private readonly prefixes: string[];
  private readonly erasureTypes: Set<string>;
  private readonly thread = OpeningThread.available ? new OpeningThread() : undefined;
  /** The file of the SQLite key store, which the thread reads the keys of large batches from itself (see openAll). */
  private readonly keyFile: string | undefined;
  /**
   * By event id, the values (as sealed: a JSON array) of events appended here while a subscription
   * of this process runs: the subscription takes them from here rather than opening what was just
   * sealed (a cipher's work per write, for nothing). Taken once; dropped if the append fails.
   */
  private readonly appendedHere = new Map<string, string>();
  private subscriptions = 0;
  /** By key id: since when a subscription has found it missing (see MISSING_KEY_GRACE_MS). */
  private readonly missingSince = new Map<string, number>();

  private readonly missingKeyGraceMs: number;
  /** The page cache, MiB, of the thread's connection that makes a bulk import's keys (SQLite's default if none). */
  private readonly keyMakerCacheMiB: number | undefined;

  constructor(
    private readonly inner: EventStore,
    readonly keys: DataKeys,
    kinds: SealedKind[],
    { missingKeyGraceMs = MISSING_KEY_GRACE_MS, keyMakerCacheMiB }: { missingKeyGraceMs?: number; keyMakerCacheMiB?: number } = {},
  ) {
    this.missingKeyGraceMs = missingKeyGraceMs;
    this.keyMakerCacheMiB = keyMakerCacheMiB;
    this.prefixes = kinds.map((k) => `${k.streamPrefix}-`);
    this.erasureTypes = new Set(kinds.map((k) => k.events.erased));
    this.keyFile = this.thread ? keys.store.file : undefined;
  }

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (!this.isRecord(streamId) || events.every((e) => Object.keys(e.data).length === 0)) {
      return this.inner.appendToStream(streamId, events.map(versioned), expected);
    }
    const keyId = keyStreamOf(streamId);
    // A snapshot's record has its key already: it is never the first to make it.
    const sealed = this.sealValues(keyId === streamId, events, await this.keys.forWriting(keyId, { isNew: expected === 'no_stream' && keyId === streamId }));
    try {
      return await this.inner.appendToStream(streamId, sealed, expected);
    } catch (error) {
      for (const event of events) this.appendedHere.delete(event.id);
      throw error;
    }
  }

  /**
   * As appendToStream, each append's values sealed with its own record's key: the keys fetched or
   * made together (on SQLite, the new ones in one transaction), then every append sent at once. An
   * append whose key cannot be had (erased: RecordErasedError) has that as its outcome; the others go on.
   */
  async appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]> {
    if (appends.length >= SEAL_IN_THREAD_FROM && this.keyFile && appends.every((a) => this.isNewRecord(a))) {
      // The first large batch starts the thread, and is sealed here while the thread loads its script.
      if (this.thread!.started) return this.appendSealedInThread(appends, this.keyFile);
      this.thread!.start();
    }
    const outcomes = new Array<AppendOutcome>(appends.length);
    const sealed = await Promise.all(
      appends.map(async ({ streamId, events, expected }, i): Promise<StreamAppend | undefined> => {
        if (!this.isRecord(streamId) || events.every((e) => Object.keys(e.data).length === 0)) return { streamId, events: events.map(versioned), expected };
        const keyId = keyStreamOf(streamId);
        try {
          const key = await this.keys.forWriting(keyId, { isNew: expected === 'no_stream' && keyId === streamId });
          return { streamId, events: this.sealValues(keyId === streamId, events, key), expected };
        } catch (error) {
          outcomes[i] = { error };
          return undefined;
        }
      }),
    );
    const sent = sealed.filter((append) => append !== undefined);
    const results = sent.length > 0 ? await this.inner.appendToStreams(sent) : [];
    let next = 0;
    sealed.forEach((append, i) => {
      if (!append) return;
      const outcome = results[next++];
      if ('error' in outcome) for (const event of append.events) this.appendedHere.delete(event.id);
      outcomes[i] = outcome;
    });
    return outcomes;
  }

  /** A new record's create (a bulk import's row): one event with values, in its own stream, which it starts. */
  private isNewRecord({ streamId, events, expected }: StreamAppend): boolean {
    return (
      expected === 'no_stream' && events.length === 1 && this.isRecord(streamId) && keyStreamOf(streamId) === streamId && Object.keys(events[0].data).length > 0
    );
  }

  /**
   * As appendToStreams, for a large batch of new records (a bulk import's): their keys made and their
   * values sealed in the thread (OpeningThread.sealMakingKeys), which the key store's inserts and the
   * ciphers would otherwise cost this one as much as the rest of a row. Keys made there are not
   * kept in this process's cache: a bulk import's would only push out the ones requests use.
   */
  private async appendSealedInThread(appends: StreamAppend[], keyFile: string): Promise<AppendOutcome[]> {
    const events = appends.map((a) => a.events[0]);
    const values = events.map((e) => plainValues(e.data));
    const sealed = await this.thread!.sealMakingKeys(
      { file: keyFile, cacheMiB: this.keyMakerCacheMiB },
      appends.map((a) => a.streamId),
      events.map((e) => e.id),
      values,
    );
    const outcomes = new Array<AppendOutcome>(appends.length);
    const sent: StreamAppend[] = [];
    const sentAt: number[] = [];
    if (this.subscriptions > 0 && this.appendedHere.size + appends.length > APPENDED_KEPT) this.appendedHere.clear();
    sealed.forEach((value, i) => {
      if (value === null) {
        outcomes[i] = { error: new RecordErasedError(appends[i].streamId) };
        return;
      }
      const event = events[i];
      if (this.subscriptions > 0) this.appendedHere.set(event.id, values[i]);
      const data: SealedData = { fields: Object.keys(event.data), sealed: value };
      sent.push({ ...appends[i], events: [{ ...versioned(event), data: data as unknown as Record<string, unknown> }] });
      sentAt.push(i);
    });
    const results = sent.length > 0 ? await this.inner.appendToStreams(sent) : [];
    results.forEach((outcome, k) => {
      outcomes[sentAt[k]] = outcome;
      if ('error' in outcome) this.appendedHere.delete(sent[k].events[0].id);
    });
    return outcomes;
  }

  /** The events with their values sealed, apart from the append's wait: its KeyObject is let go before the disk's sync. */
  private sealValues(ownKey: boolean, events: NewEvent[], keyBytes: Buffer): NewEvent[] {
    const key = keyObject(keyBytes);
    // Unbounded only if no subscription took them (it stopped): then start again.
    if (this.appendedHere.size >= APPENDED_KEPT) this.appendedHere.clear();
    return events.map((event) => {
      const fields = Object.keys(event.data);
      if (fields.length === 0) return versioned(event);
      const values = plainValues(event.data);
      // Not a snapshot's: no subscription of the service's follows snapshot streams to take them.
      if (this.subscriptions > 0 && ownKey) this.appendedHere.set(event.id, values);
      const data: SealedData = { fields, sealed: seal(key, values, event.id) };
      return { ...versioned(event), data: data as unknown as Record<string, unknown> };
    });
  }

  async readStream(streamId: string, fromRevision?: number, maxCount?: number): Promise<StoredEvent[]> {
    const events = await this.inner.readStream(streamId, fromRevision, maxCount);
    if (!this.isRecord(streamId)) return events;
    return this.openAll(events, true);
  }

  async readLastEvent(streamId: string): Promise<StoredEvent | null> {
    const last = await this.inner.readLastEvent(streamId);
    if (!last || !this.isRecord(streamId)) return last;
    const [opened] = await this.openAll([last], true);
    return opened;
  }

  headPosition(): Promise<Position> {
    return this.inner.headPosition();
  }

  eventsBetween(from: Position, to: Position): number | null {
    return this.inner.eventsBetween(from, to);
  }

  /**
   * The inner subscription's batches, opened, READ_AHEAD batches read ahead: while the caller folds
   * one, the next ones are read and opened (in the worker thread, if large), so the thread always has
   * a batch to work on.
   */
  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    // A signal of its own: when the caller stops, the inner subscription stops too, even while the
    // batches read ahead wait for events.
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    if (options.signal.aborted) stop.abort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
    const batches = this.inner.subscribeToAll(from, { ...options, signal: stop.signal })[Symbol.asyncIterator]();
    this.subscriptions++;
    const ahead: Promise<EventBatch | undefined>[] = [];
    const readAhead = () => {
      while (ahead.length < READ_AHEAD) {
        const next = options.values === false ? this.nextAsStored(batches) : this.nextOpened(batches);
        next.catch(() => undefined); // a failure is thrown where it is awaited, or dropped with the subscription
        ahead.push(next);
      }
    };
    try {
      readAhead();
      for (let batch = await ahead.shift(); batch; batch = await ahead.shift()) {
        // Stopped: the batches read ahead are dropped, as the inner subscription would not have read them.
        if (stop.signal.aborted) return;
        readAhead();
        yield batch;
      }
    } finally {
      if (--this.subscriptions === 0) this.appendedHere.clear();
      options.signal.removeEventListener('abort', onAbort);
      stop.abort();
      // Ends the inner subscription (its own clean-up runs) once the reads under way settle.
      void batches.return?.(undefined).catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    await this.thread?.close();
    await this.inner.close();
    await this.keys.close();
  }

  private async nextAsStored(batches: AsyncIterator<EventBatch>): Promise<EventBatch | undefined> {
    const next = await batches.next();
    return next.done ? undefined : next.value;
  }

  private async nextOpened(batches: AsyncIterator<EventBatch>): Promise<EventBatch | undefined> {
    const next = await batches.next();
    return next.done ? undefined : { events: await this.openSubscribed(next.value.events), position: next.value.position };
  }

  /**
   * A subscription's batch, opened. A key still missing MISSING_KEY_GRACE_MS after a subscription
   * first found it so is lost, not late: the events that need it come as unreadable (asUnreadable),
   * for the subscriber to park, and the rest of the batch is opened. Sooner, the batch fails as
   * unavailable and the subscriber tries again.
   */
  private async openSubscribed(events: StoredEvent[]): Promise<StoredEvent[]> {
    // Keys found lost in this batch stay marked so (the next batch with their events hands them over at once).
    const lost = new Set<string>();
    for (;;) {
      try {
        const opened = await this.openAll(events, false, this.appendedHere);
        if (this.missingSince.size > 0) {
          for (const event of events) if (!lost.has(keyStreamOf(event.streamId))) this.missingSince.delete(keyStreamOf(event.streamId));
        }
        return opened;
      } catch (error) {
        if (!(error instanceof MissingKeysError)) throw error;
        const now = Date.now();
        for (const keyId of error.keyIds) if (!this.missingSince.has(keyId)) this.missingSince.set(keyId, now);
        for (const keyId of error.keyIds) if (now - this.missingSince.get(keyId)! >= this.missingKeyGraceMs) lost.add(keyId);
        if (error.keyIds.some((keyId) => !lost.has(keyId))) throw error;
        events = events.map((event) => {
          const keyId = keyStreamOf(event.streamId);
          if (!lost.has(keyId) || !isSealed(event)) return event;
          const { data: _, ...place } = event;
          return asUnreadable(
            place,
            `its record's data key ${keyId} is missing from the key store (for ${Math.round((now - this.missingSince.get(keyId)!) / 1000)} s)`,
          );
        });
      }
    }
  }

  /** A record's stream or its snapshot stream: values sealed with the record's key. */
  private isRecord(streamId: string): boolean {
    const keyId = keyStreamOf(streamId);
    return this.prefixes.some((p) => keyId.startsWith(p));
  }

  /**
   * Opens the sealed events of record streams, fetching the keys they need in one go (and keeping
   * them, or not). Those whose values are `known` (appended here) take them from there instead.
   * Plain ones (from before sealing) of erased records are blanked.
   */
  private async openAll(events: StoredEvent[], keep: boolean, known?: Map<string, string>): Promise<StoredEvent[]> {
    const keyIds = new Set<string>();
    const plain: StoredEvent[] = [];
    // The sealed events to open, and the index of each one's key among keyIds.
    const sealed: StoredEvent[] = [];
    const keyIndexes: number[] = [];
    const keyIndex = new Map<string, number>();
    for (const event of events) {
      if (this.erasureTypes.has(event.type)) this.keys.forget(event.streamId);
      else if (!this.isRecord(event.streamId)) continue;
      else if (!isSealed(event)) {
        if (Object.keys(event.data).length > 0) plain.push(event);
      } else {
        const values = known?.get(event.id);
        if (values === undefined) {
          const keyId = keyStreamOf(event.streamId);
          let k = keyIndex.get(keyId);
          if (k === undefined) {
            keyIndex.set(keyId, (k = keyIndex.size));
            keyIds.add(keyId);
          }
          sealed.push(event);
          keyIndexes.push(k);
        } else {
          known!.delete(event.id);
          setValues(event, values);
        }
      }
    }
    if (plain.length > 0) await this.blankErased(plain);
    if (keyIds.size === 0) return events;
    // The first large batch starts the thread, and is opened here while the thread loads its script.
    const inThread = this.thread?.started === true && sealed.length >= OPEN_IN_THREAD_FROM;
    if (!inThread && sealed.length >= OPEN_IN_THREAD_FROM) this.thread?.start();
    if (inThread && this.keyFile && !keep) {
      // A subscription's large batch (a rebuild's, a catch-up's): its keys, used once, are not kept
      // here, so the thread reads them from the key store itself, and opens the values with them,
      // while this thread folds the batch before.
      const { opened, absent } = await this.thread.openReadingKeys(
        this.keyFile,
        sealed.map((event) => (event.data as unknown as SealedData).sealed),
        sealed.map((event) => event.id),
        [...keyIds],
        Int32Array.from(keyIndexes),
      );
      await this.checkErased(absent);
      sealed.forEach((event, i) => setValues(event, opened[i]));
      return events;
    }
    const keys = await this.keys.forReading(keyIds, { keep });
    await this.checkErased([...keyIds].filter((keyId) => !keys.has(keyId)));
    const keyOf = (event: StoredEvent) => keys.get(keyStreamOf(event.streamId)) ?? undefined;
    const valuesOf = (event: StoredEvent) => (event.data as unknown as SealedData).sealed;
    const opened = inThread
      ? await this.thread.open(
          sealed.map(valuesOf),
          sealed.map((e) => e.id),
          sealed.map(keyOf),
        )
      : this.openHere(sealed, keys, valuesOf);
    sealed.forEach((event, i) => setValues(event, opened[i]));
    return events;
  }

  /** Opens the values on this thread, with one KeyObject per key for the batch (a record's history opens many values with one key). */
  private openHere(sealed: StoredEvent[], keys: Map<string, Buffer | null>, valuesOf: (event: StoredEvent) => string): (string | null)[] {
    const keyOf = keyObjectsOnce((keyId: string) => keys.get(keyId));
    return sealed.map((event) => openOrNull(keyOf(keyStreamOf(event.streamId)), valuesOf(event), event.id));
  }

  /**
   * Records whose sealed events have no key in the key store, not even a destroyed key's tombstone:
   * the key is not there yet, as this read sees the key store, and the read fails as unavailable.
   * Unless the record's stream ends in its erasure (nothing is appended after one): then its key was
   * destroyed and its tombstone is lost (a key store restored from a backup older than the
   * erasure), and its events open blank.
   */
  private async checkErased(keyIds: string[]): Promise<void> {
    const missing: string[] = [];
    for (const keyId of keyIds) {
      const last = await this.inner.readLastEvent(keyId);
      if (!last || !this.erasureTypes.has(last.type)) missing.push(keyId);
    }
    if (missing.length > 0) throw new MissingKeysError(this.keys.store.name, missing);
  }

  /**
   * Events written before values were sealed stay in plain where the store cannot rewrite them
   * (EventStoreDB). Once their record is erased (its key destroyed, though it may never have held
   * one), they read with every value '', as sealed ones do: no read or fold, a rebuild's included,
   * writes them anywhere again.
   */
  private async blankErased(plain: StoredEvent[]): Promise<void> {
    const keys = await this.keys.store.getMany([...new Set(plain.map((e) => e.streamId))]);
    for (const event of plain) {
      if (keys.get(event.streamId) === null) event.data = Object.fromEntries(Object.keys(event.data).map((field) => [field, '']));
    }
  }
}

/**
 * Gives a sealed event its values from their opened JSON: '' for each where it did not open, so an
 * erased record's events read like any other's. In place: the event was made for this read alone,
 * and a rebuild opens millions.
 */
function setValues(event: StoredEvent, opened: string | null): void {
  const { fields } = event.data as unknown as SealedData;
  const values = opened === null ? null : (JSON.parse(opened) as unknown[]);
  const data: Record<string, unknown> = {};
  fields.forEach((field, i) => (data[field] = values ? values[i] : ''));
  event.data = data;
}
