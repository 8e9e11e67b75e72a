import type {
  AppendResult,
  EventBatch,
  EventStore,
  ExpectedRevision,
  NewEvent,
  Position,
  StoredEvent,
  SubscribeOptions,
} from '../event-store/event-store.port';
import type { RecordKind } from '../records/record';
import { DataKeys, open, seal } from './data-keys';

/**
 * A record event's data as stored from schema version 2 on: the names of the fields it carries,
 * in plain (history shows which fields an event changed, even after erasure), and their values
 * sealed with the record's key, as one JSON array in the order of `fields`.
 */
interface SealedData {
  fields: string[];
  sealed: string;
}

/** Events of schema version 2 and later have their record data sealed; version 1 is plaintext. */
export const SEALED_SCHEMA_VERSION = 2;

const isSealed = (event: StoredEvent) =>
  event.metadata.schemaVersion >= SEALED_SCHEMA_VERSION && typeof (event.data as Partial<SealedData>).sealed === 'string';

/**
 * The event store as the rest of the service sees it: the field values of every record event
 * (`profile-<id>`, `customer-<id>`) are sealed with that record's data key on the way in and opened
 * on the way out, so nothing else handles ciphertext. The key id is the stream id. Metadata, types,
 * ids and other streams stay plain.
 *
 * Once a record's key is destroyed its events open with every value '' (field names kept): folds,
 * rebuilds and history go on, with nothing left to show. Reading a record's erasure event makes
 * this process forget the key it may have cached.
 */
export class SealedEventStore implements EventStore {
  private readonly prefixes: string[];
  private readonly erasureTypes: Set<string>;

  constructor(
    private readonly inner: EventStore,
    readonly keys: DataKeys,
    kinds: RecordKind[],
  ) {
    this.prefixes = kinds.map((k) => `${k.streamPrefix}-`);
    this.erasureTypes = new Set(kinds.map((k) => k.events.erased));
  }

  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    if (!this.isRecord(streamId) || events.every((e) => Object.keys(e.data).length === 0)) {
      return this.inner.appendToStream(streamId, events, expected);
    }
    const key = await this.keys.forWriting(streamId);
    const sealed = events.map((event) => {
      const fields = Object.keys(event.data);
      if (fields.length === 0) return event;
      const data: SealedData = { fields, sealed: seal(key, JSON.stringify(fields.map((f) => event.data[f])), event.id) };
      // The version says how to read the data, so it is this store's to set, whatever the caller said.
      return { ...event, data: data as unknown as Record<string, unknown>, metadata: { ...event.metadata, schemaVersion: SEALED_SCHEMA_VERSION } };
    });
    return this.inner.appendToStream(streamId, sealed, expected);
  }

  async readStream(streamId: string, fromRevision?: number): Promise<StoredEvent[]> {
    const events = await this.inner.readStream(streamId, fromRevision);
    if (!this.isRecord(streamId)) return events;
    return this.openAll(events, true);
  }

  headPosition(): Promise<Position> {
    return this.inner.headPosition();
  }

  eventsBetween(from: Position, to: Position): number | null {
    return this.inner.eventsBetween(from, to);
  }

  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    for await (const batch of this.inner.subscribeToAll(from, options)) {
      yield { events: await this.openAll(batch.events, false), position: batch.position };
    }
  }

  async close(): Promise<void> {
    await this.inner.close();
    await this.keys.store.close();
  }

  private isRecord(streamId: string): boolean {
    return this.prefixes.some((p) => streamId.startsWith(p));
  }

  /** Opens the sealed events of record streams, fetching the keys they need in one go (and keeping them, or not). */
  private async openAll(events: StoredEvent[], keep: boolean): Promise<StoredEvent[]> {
    const keyIds = new Set<string>();
    for (const event of events) {
      if (this.erasureTypes.has(event.type)) this.keys.forget(event.streamId);
      else if (isSealed(event) && this.isRecord(event.streamId)) keyIds.add(event.streamId);
    }
    if (keyIds.size === 0) return events;
    const keys = await this.keys.forReading(keyIds, { keep });
    return events.map((event) => (keyIds.has(event.streamId) && isSealed(event) ? openEvent(event, keys.get(event.streamId)) : event));
  }
}

/** The event with its values opened; '' for each when the key is gone or the seal does not open. */
function openEvent(event: StoredEvent, key: Buffer | undefined): StoredEvent {
  const { fields, sealed } = event.data as unknown as SealedData;
  let values: unknown[] | undefined;
  if (key) {
    try {
      values = JSON.parse(open(key, sealed, event.id));
    } catch {
      values = undefined; // altered, or sealed with another key: unreadable, like an erased one
    }
  }
  const data: Record<string, unknown> = {};
  fields.forEach((field, i) => (data[field] = values ? values[i] : ''));
  // In place: the event was made for this read alone, and a rebuild opens millions.
  event.data = data;
  return event;
}
