import {
  asUnreadable,
  type AppendOutcome,
  type AppendResult,
  type EventBatch,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type StoredEvent,
  type StreamAppend,
  type SubscribeOptions,
  UnreadableEventError,
} from './event-store.port';
import { NewerEventsError, WrittenVersions } from './written-versions';

/**
 * One step of an event type's history: an event stored at version n, as version n + 1 has it. It
 * may become several events, or none (never for what may be a stream's last event: a write appends
 * at the revision of the last event it reads). An event of another type it returns says that type's
 * version in its metadata (`eventVersion`; none: that type's current one). Pure: it runs on every
 * read of the event, never on the store. Subscriptions that read no values (the feed's index) hand
 * it the event's data sealed: a step that reshapes data leaves data it cannot read as it is.
 */
export type Upcaster = (event: StoredEvent) => StoredEvent[];

/** By event type, the step from each version on: `{ CustomerCreated: { 1: fromV1 } }` makes version 2 the one written. */
export type UpcasterChains = Record<string, Record<number, Upcaster>>;

/** What upcasting needs of a kind of record (records/record.ts's RecordKind is one). */
export interface UpcastKind {
  label: string;
  streamPrefix: string;
  /** Its event types: those with no chain are at version 1. */
  events: Record<string, string>;
  upcasters: UpcasterChains;
}

/** The version of `type` the code writes and reads: one past its chain's last step (1 without one). */
export function currentVersion(chains: UpcasterChains, type: string): number {
  let byType = currentVersions.get(chains);
  if (!byType) currentVersions.set(chains, (byType = new Map<string, number>()));
  let version = byType.get(type);
  if (version === undefined) {
    const steps = Object.keys(chains[type] ?? {}).map(Number);
    byType.set(type, (version = steps.length === 0 ? 1 : Math.max(...steps) + 1));
  }
  return version;
}
/** Chains never change once made: each type's current version is worked out once (every append asks). */
const currentVersions = new WeakMap<UpcasterChains, Map<string, number>>();

/** Refuses chains with a gap: every type's steps run from version 1 to its last, one each. */
export function checkChains(kinds: UpcastKind[]): void {
  for (const { label, upcasters } of kinds) {
    for (const [type, steps] of Object.entries(upcasters)) {
      const current = currentVersion(upcasters, type);
      for (let version = 1; version < current; version++) {
        if (typeof steps[version] !== 'function') {
          throw new Error(`${label} events ${type}: no upcaster from version ${version} to ${version + 1}, though version ${current} is current`);
        }
      }
    }
  }
}

interface Registry {
  label: string;
  prefix: string;
  chains: UpcasterChains;
  /** By type: the current version, for every type the kind knows. */
  current: Map<string, number>;
}

/**
 * The event store as the rest of the service sees it: every event of a record's stream read in the
 * shape its type has now. Each stored event carries its type's version (`eventVersion` in its
 * metadata; none is version 1); on every read (a stream, its last event, a subscription) it goes
 * through its kind's chain of upcasters up to the current version, so no fold, projection, history,
 * feed or CLI reads an older shape. An event of a version newer than the code knows (a rollback after an upgrade) is unreadable: it is
 * never misread; and a store that holds one is refused at start (open). Other streams (slugs,
 * idempotency, snapshots) pass as they are.
 */
export class UpcastingEventStore implements EventStore {
  private readonly registries: Registry[];
  private readonly written: WrittenVersions;

  constructor(
    private readonly inner: EventStore,
    kinds: UpcastKind[],
  ) {
    checkChains(kinds);
    this.registries = kinds.map(({ label, streamPrefix, events, upcasters }) => ({
      label,
      prefix: `${streamPrefix}-`,
      chains: upcasters,
      current: new Map([...Object.values(events), ...Object.keys(upcasters)].map((type) => [type, currentVersion(upcasters, type)])),
    }));
    this.written = new WrittenVersions(inner);
  }

  /**
   * The store as `kinds` read it. Refuses (NewerEventsError, naming each type and its versions) a
   * store that holds an event type, or a version of one, this build does not know: a rollback after
   * an upgrade that wrote them, which would otherwise misread them or stop on them.
   */
  static async open(inner: EventStore, kinds: UpcastKind[]): Promise<UpcastingEventStore> {
    const store = new UpcastingEventStore(inner, kinds);
    const stored = await store.written.read();
    const newer: NewerEventsError['newer'] = [];
    for (const [prefix, types] of Object.entries(stored)) {
      const registry = store.registries.find((r) => r.prefix === `${prefix}-`);
      for (const [type, version] of Object.entries(types)) {
        const known = registry?.current.get(type) ?? null;
        if (known === null || version > known) newer.push({ label: registry?.label ?? prefix, type, stored: version, known });
      }
    }
    if (newer.length > 0) throw new NewerEventsError(newer);
    return store;
  }

  /**
   * As they are (the code that writes an event's shape stamps its version: records/handle-command.ts),
   * once the store's record of the versions written holds theirs (WrittenVersions).
   */
  async appendToStream(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    await this.note([{ streamId, events, expected }]);
    return this.inner.appendToStream(streamId, events, expected);
  }

  /** As appendToStream: every version the appends write noted first, in one note. */
  async appendToStreams(appends: StreamAppend[]): Promise<AppendOutcome[]> {
    await this.note(appends);
    return this.inner.appendToStreams(appends);
  }

  /** The versions of the record events of these appends, noted (see WrittenVersions) before any is written. */
  private note(appends: StreamAppend[]): Promise<void> {
    const written: { prefix: string; type: string; version: number }[] = [];
    const seen = new Set<string>();
    for (const { streamId, events } of appends) {
      const registry = this.registryOf(streamId);
      if (!registry) continue;
      for (const e of events) {
        const version = e.metadata.eventVersion ?? 1;
        const key = `${registry.prefix}${e.type}/${version}`;
        if (seen.has(key)) continue;
        seen.add(key);
        written.push({ prefix: registry.prefix.slice(0, -1), type: e.type, version });
      }
    }
    return this.written.note(written);
  }

  async readStream(streamId: string, fromRevision?: number, maxCount?: number): Promise<StoredEvent[]> {
    const events = await this.inner.readStream(streamId, fromRevision, maxCount);
    const registry = this.registryOf(streamId);
    return registry ? this.upcastAll(events, () => registry) : events;
  }

  /** The last event as upcast: one that upcasts to none leaves the one before it last. */
  async readLastEvent(streamId: string): Promise<StoredEvent | null> {
    const registry = this.registryOf(streamId);
    let last = await this.inner.readLastEvent(streamId);
    while (last && registry) {
      const shown = upcast(registry, last);
      if (shown.length > 0) return shown[shown.length - 1];
      last = last.revision === 0 ? null : ((await this.inner.readStream(streamId, last.revision - 1, 1))[0] ?? null);
    }
    return last;
  }

  headPosition(): Promise<Position> {
    return this.inner.headPosition();
  }

  eventsBetween(from: Position, to: Position): number | null {
    return this.inner.eventsBetween(from, to);
  }

  /**
   * Upcast as it goes; an event that cannot be (a newer version, a step that throws) comes as
   * unreadable (asUnreadable), for its subscriber to park. A subscriber that reads no values (the
   * feed's index: place, stream, account, time) gets such an event as stored instead: what it keeps
   * of one does not depend on its shape, so an instance of an older build indexes an event of a
   * newer version rather than parking it (its entry is read, upcast, when a page serves it).
   */
  async *subscribeToAll(from: Position, options: SubscribeOptions): AsyncIterable<EventBatch> {
    const failed = options.values === false ? 'as stored' : 'unreadable';
    for await (const batch of this.inner.subscribeToAll(from, options)) {
      const events = this.upcastAll(batch.events, (event) => this.registryOf(event.streamId), failed);
      yield events === batch.events ? batch : { events, position: batch.position };
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private registryOf(streamId: string): Registry | undefined {
    for (const registry of this.registries) if (streamId.startsWith(registry.prefix)) return registry;
    return undefined;
  }

  /**
   * The events upcast; the same array when every one is current already (the usual case: nothing
   * copied). One that cannot be is `failed`: thrown as unreadable, handed over as such, or as stored.
   */
  private upcastAll(
    events: StoredEvent[],
    registryOf: (event: StoredEvent) => Registry | undefined,
    failed: 'throw' | 'unreadable' | 'as stored' = 'throw',
  ): StoredEvent[] {
    let out: StoredEvent[] | undefined;
    for (let i = 0; i < events.length; i++) {
      const event = events[i];
      const registry = registryOf(event);
      if (!registry || event.unreadable !== undefined || (event.metadata.eventVersion ?? 1) === (registry.current.get(event.type) ?? 1)) {
        out?.push(event);
        continue;
      }
      out ??= events.slice(0, i);
      try {
        out.push(...upcast(registry, event));
      } catch (error) {
        const reason = error instanceof UnreadableEventError ? error.reason : `its upcaster failed: ${(error as Error).message}`;
        if (failed === 'throw') throw new UnreadableEventError(event.streamId, event.revision, reason);
        const { data: _, ...place } = event;
        out.push(failed === 'as stored' ? event : asUnreadable(place, reason));
      }
    }
    return out ?? events;
  }
}

/** One stored event in its type's current shape, through its chain's steps from its version. */
function upcast(registry: Registry, event: StoredEvent): StoredEvent[] {
  let version = event.metadata.eventVersion ?? 1;
  const current = registry.current.get(event.type) ?? 1;
  if (version > current) {
    throw new UnreadableEventError(
      event.streamId,
      event.revision,
      `it is ${event.type} version ${version}, newer than the ${current} this version of the service reads`,
    );
  }
  // The usual step, one event in and one of its type out, taken in a loop: no arrays on the way.
  while (version < current) {
    const steps = registry.chains[event.type][version](event);
    if (steps.length !== 1 || steps[0].type !== event.type) return upcastEach(registry, event, version, steps);
    event = stamp(steps[0], event, ++version);
  }
  return [event];
}

/** What a step that made several events, none, or another type made, each taken on to its own current version. */
function upcastEach(registry: Registry, event: StoredEvent, version: number, steps: StoredEvent[]): StoredEvent[] {
  const out: StoredEvent[] = [];
  // Metadata stamped here, when a step shares one among several events (each then gets a copy).
  const stamped = new Set<object>();
  for (const next of steps) {
    const nextVersion = next.type === event.type ? version + 1 : (next.metadata.eventVersion ?? registry.current.get(next.type) ?? 1);
    const own = next !== event && next.metadata !== event.metadata && !stamped.has(next.metadata);
    if (own) stamped.add(next.metadata);
    out.push(...upcast(registry, own ? stamp(next, event, nextVersion) : stamp({ ...next, metadata: { ...next.metadata } }, event, nextVersion)));
  }
  return out;
}

/**
 * `next` with its version stamped: in place when the step made its metadata anew (the usual
 * case: one copy per step, not two), else on a copy (the step passed the event's own on).
 */
function stamp(next: StoredEvent, from: StoredEvent, version: number): StoredEvent {
  if (next !== from && next.metadata !== from.metadata) {
    next.metadata.eventVersion = version;
    return next;
  }
  return { ...next, metadata: { ...next.metadata, eventVersion: version } };
}
