import { randomUUID } from 'node:crypto';
import { StoreUnavailableError, WriteOutcomeUnknownError } from '../storage/store-unavailable.error';
import { type EventStore, WrongExpectedRevisionError } from './event-store.port';

/** By stream prefix (`customer`), by event type: the newest version of it ever written. */
export type VersionsByKind = Record<string, Record<string, number>>;

/** The stream that keeps them: no record kind's prefix, so no read model or feed follows it. */
export const WRITTEN_VERSIONS_STREAM = 'service-event-versions';
const TYPE = 'EventVersionsWritten';

/** The store holds events of a version (or a type) this build does not know: it was written by a newer one. */
export class NewerEventsError extends Error {
  constructor(readonly newer: { label: string; type: string; stored: number; known: number | null }[]) {
    const each = newer.map(({ label, type, stored, known }) =>
      known === null
        ? `${label} events of type ${type} (version ${stored}), which this build does not know`
        : `${type} version ${stored}, where this build reads up to version ${known}`,
    );
    super(
      `The event store holds ${each.join('; ')}: a newer build of the service wrote them. Run that build or a newer one (a rollback past an event's new version cannot read it).`,
    );
    this.name = 'NewerEventsError';
  }
}

/**
 * The newest version of each record event type the store holds, kept in a stream of its own: the
 * first append of a type at a version newer than the stream says notes it there, before the event
 * itself is written (so the note is never missing; a crash between them notes a version a little
 * early, which only a rollback would notice). Each note holds the whole map, merged: the last event
 * is the record. At start, `check` compares it with what this build knows (see UpcastingEventStore).
 */
export class WrittenVersions {
  /** What the stream is known to hold at least, by prefix and type. */
  private readonly noted = new Map<string, number>();
  private noting: Promise<void> = Promise.resolve();

  constructor(private readonly store: EventStore) {}

  /** The newest versions the store holds, as its last note has them (none before any note). */
  async read(): Promise<VersionsByKind> {
    const last = await this.store.readLastEvent(WRITTEN_VERSIONS_STREAM);
    const versions = (last?.data as { versions?: VersionsByKind } | undefined)?.versions ?? {};
    for (const [prefix, types] of Object.entries(versions)) for (const [type, version] of Object.entries(types)) this.remember(prefix, type, version);
    return versions;
  }

  /** Resolves once the store's note holds each of `written` (prefix, type, version) at least. One note at a time. */
  note(written: { prefix: string; type: string; version: number }[]): Promise<void> {
    const news = written.filter(({ prefix, type, version }) => (this.noted.get(`${prefix}/${type}`) ?? 0) < version);
    if (news.length === 0) return Promise.resolve();
    const run = this.noting.then(() => this.write(news));
    this.noting = run.catch(() => undefined);
    return run;
  }

  private async write(news: { prefix: string; type: string; version: number }[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const last = await this.store.readLastEvent(WRITTEN_VERSIONS_STREAM);
      const versions = structuredClone((last?.data as { versions?: VersionsByKind } | undefined)?.versions ?? {});
      let changed = false;
      for (const { prefix, type, version } of news) {
        const types = (versions[prefix] ??= {});
        if ((types[type] ?? 0) < version) {
          types[type] = version;
          changed = true;
        }
      }
      try {
        if (changed) {
          const metadata = { accountId: '', correlationId: 'event-versions', causationId: 'event-versions' };
          await this.store.appendToStream(
            WRITTEN_VERSIONS_STREAM,
            [{ id: randomUUID(), type: TYPE, data: { versions }, metadata }],
            last ? last.revision : 'no_stream',
          );
        }
        for (const [prefix, types] of Object.entries(versions)) for (const [type, version] of Object.entries(types)) this.remember(prefix, type, version);
        return;
      } catch (error) {
        // The event it goes before is not sent: that write is not made, whatever became of the note.
        if (error instanceof WriteOutcomeUnknownError) throw new StoreUnavailableError(error.store, error.message);
        // Another writer noted first: merge with its note. Never the record write's own conflict, which would decide again.
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt >= 10) {
          throw new Error(`The note of event versions written (${WRITTEN_VERSIONS_STREAM}) stays contended after ${attempt} attempts`, { cause: error });
        }
      }
    }
  }

  private remember(prefix: string, type: string, version: number): void {
    const key = `${prefix}/${type}`;
    if ((this.noted.get(key) ?? 0) < version) this.noted.set(key, version);
  }
}
