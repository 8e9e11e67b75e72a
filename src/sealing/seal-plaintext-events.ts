import type { KeyObject } from 'node:crypto';
import type { EventStore, StoredEvent } from '../event-store/event-store.port';
import { DataKeys, digest, keyObject, seal } from './data-keys';
import { type SealedKind, versioned } from './sealed-event-store';

const PAGE = 5000;

/** An event store that can rewrite its own events (the embedded one: its file is the service's). */
export interface PlaintextEvents extends Pick<EventStore, 'readStream'> {
  /** Whether events of schema version 1 may be left. */
  readonly mayHoldPlaintext: boolean;
  /** A page of them after `after` (a global position). */
  plaintextEvents(after: number, limit: number): StoredEvent[];
  /** Replaces events' data and metadata in one transaction. */
  replacePlaintext(events: StoredEvent[]): void;
  /** Every event is sealed now: later starts skip the search. */
  markSealed(): void;
}

/**
 * Events written before record values were sealed (schema version 1) hold them in plain. On the
 * embedded store, the service's own file, they are sealed in place once, at the first start of a
 * version that seals: the record events' values with their record's key (as SealedEventStore would
 * have), an Idempotency-Key's stored answer with its record's key, and its fingerprint (a plain
 * sha256 of the request) turned into an HMAC under that key. Secure deletion zeroes the old bytes,
 * and an erasure truncates the log, so erasing such a record later leaves nothing, as for any
 * other. Other events (slugs, deletions) only move to the new version. EventStoreDB's events cannot
 * be rewritten: there, plaintext events stay as they are (see docs/operators.md).
 */
export async function sealPlaintextEvents(
  store: PlaintextEvents,
  keys: DataKeys,
  kinds: SealedKind[],
  /** Told once, before the first page, when there is anything to seal: on a large store it takes a while. */
  starting: () => void = () => undefined,
): Promise<number> {
  if (!store.mayHoldPlaintext) return 0;
  const sealer = new PlaintextSealer(store, keys, kinds);
  let after = 0;
  let sealed = 0;
  for (let page = store.plaintextEvents(after, PAGE); page.length > 0; page = store.plaintextEvents(after, PAGE)) {
    if (sealed === 0) starting();
    store.replacePlaintext(await sealer.sealPage(page));
    sealed += page.length;
    after = Number(page[page.length - 1].position.commit);
  }
  store.markSealed();
  return sealed;
}

/** Events of schema version 1 as they are to be stored again: sealed, and at the version that says so. */
class PlaintextSealer {
  /** The page's records' keys, each made a KeyObject once (see keyObject). */
  private pageKeys = new Map<string, KeyObject>();

  constructor(
    private readonly store: PlaintextEvents,
    private readonly keys: DataKeys,
    private readonly kinds: SealedKind[],
  ) {}

  async sealPage(page: StoredEvent[]): Promise<StoredEvent[]> {
    // The page's record keys in one go: made together, they share one transaction of the key store.
    const recordStreams = new Set(page.filter((e) => this.kindOf(e.streamId) && Object.keys(e.data).length > 0).map((e) => e.streamId));
    await Promise.all([...recordStreams].map((streamId) => this.keys.forWriting(streamId)));
    this.pageKeys = new Map();
    const replaced: StoredEvent[] = [];
    for (const event of page) {
      replaced.push({ ...versioned(event), data: await this.sealedData(event) });
    }
    return replaced;
  }

  private async sealedData(event: StoredEvent): Promise<Record<string, unknown>> {
    if (this.kindOf(event.streamId)) return this.sealedValues(event);
    if (event.type === 'IdempotencyKeyClaimed') return this.sealedClaim(event.data as { fingerprint: string; recordId: string });
    if (event.type === 'IdempotencyKeyAnswered') return this.sealedAnswer(event.streamId, event.data as { body: unknown; revision: number });
    return event.data;
  }

  /** A record event's values, with its record's key, as SealedEventStore would have sealed them. */
  private async sealedValues({ streamId, id, data }: StoredEvent): Promise<Record<string, unknown>> {
    const fields = Object.keys(data);
    if (fields.length === 0) return data;
    const key = await this.keyOf(streamId);
    return { fields, sealed: seal(key, JSON.stringify(fields.map((f) => data[f])), id) };
  }

  /** A claim's fingerprint (a plain sha256 of the request) as an HMAC under its record's key. */
  private async sealedClaim({ fingerprint, recordId }: { fingerprint: string; recordId: string }): Promise<Record<string, unknown>> {
    const streamId = await this.recordStream(recordId);
    // A claim whose create never ran has no record, and nothing to compare against any more.
    return { recordId, fingerprint: streamId ? digest(await this.keyOf(streamId), fingerprint) : '' };
  }

  /** A stored answer, sealed with the key of the record it created. */
  private async sealedAnswer(streamId: string, { body, revision }: { body: unknown; revision: number }): Promise<Record<string, unknown>> {
    // The body is the create's envelope: {data: {Customer: {id, ...}}, ...}.
    const [label, record] = Object.entries((body as { data: Record<string, { id: string }> }).data)[0];
    const kind = this.kinds.find((k) => k.label === label)!;
    const key = await this.keyOf(`${kind.streamPrefix}-${record.id}`);
    return { revision, sealed: seal(key, JSON.stringify(body), streamId) };
  }

  private async keyOf(streamId: string): Promise<KeyObject> {
    let key = this.pageKeys.get(streamId);
    if (!key) this.pageKeys.set(streamId, (key = keyObject(await this.keys.forWriting(streamId))));
    return key;
  }

  private kindOf(streamId: string): SealedKind | undefined {
    return this.kinds.find((k) => streamId.startsWith(`${k.streamPrefix}-`));
  }

  /** The record an idempotency event is about, by the stream that exists for its id. */
  private async recordStream(recordId: string): Promise<string | undefined> {
    for (const kind of this.kinds) {
      const streamId = `${kind.streamPrefix}-${recordId}`;
      if ((await this.store.readStream(streamId)).length > 0) return streamId;
    }
    return undefined;
  }
}
