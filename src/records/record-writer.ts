import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors';
import {
  AppendResult,
  DomainEvent,
  EventMetadata,
  EventStore,
  WrongExpectedRevisionError,
} from '../event-store/event-store.port';
import type { RequestContext } from '../http/request-context';
import type { ProjectionsService } from '../projections/projections.service';
import { evolveRecord, RecordKind, RecordState, streamIdOf } from './record';

export const SCHEMA_VERSION = 1;
const MAX_ATTEMPTS = 10;

/** Metadata of every event a command appends. The access token is never part of it. */
export function eventMetadata(context: RequestContext, causationId: string): EventMetadata {
  return { accountId: context.accountId, correlationId: context.requestId, causationId, schemaVersion: SCHEMA_VERSION };
}

export function withMetadata(events: DomainEvent[], metadata: EventMetadata) {
  return events.map((e) => ({ id: randomUUID(), type: e.type, data: e.data, metadata }));
}

/** Decides on the record as read; may do other work first (a slug reservation) and return events. */
export type Decision = (state: RecordState | null) => DomainEvent[] | Promise<DomainEvent[]>;

/**
 * The write path of one record: fold its stream, decide, append at the revision read. When another
 * writer got there first, the whole thing runs again on the new state, so no update is lost. Then it
 * waits for the read models, so the caller's next read sees the write.
 */
export class RecordWriter {
  constructor(
    private readonly kind: RecordKind,
    private readonly eventStore: EventStore,
    private readonly projections: ProjectionsService,
  ) {}

  async load(id: string): Promise<{ state: RecordState | null; revision: number | 'no_stream' }> {
    let state: RecordState | null = null;
    const events = await this.eventStore.readStream(streamIdOf(this.kind, id));
    for (const event of events) state = evolveRecord(this.kind, state, event);
    return { state, revision: events.length ? events[events.length - 1].revision : 'no_stream' };
  }

  /** Returns the append, or null when the decision was to change nothing. */
  async write(id: string, context: RequestContext, causationId: string, decide: Decision): Promise<AppendResult | null> {
    for (let attempt = 1; ; attempt++) {
      const { state, revision } = await this.load(id);
      const events = await decide(state);
      if (events.length === 0) return null;
      try {
        const streamId = streamIdOf(this.kind, id);
        const written = await this.eventStore.appendToStream(
          streamId,
          withMetadata(events, eventMetadata(context, causationId)),
          revision,
        );
        await this.projections.waitFor(streamId, written.position);
        return written;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt === MAX_ATTEMPTS) {
          throw new ApiError('CONFLICT', `The ${this.kind.label.toLowerCase()} is being changed by others right now; try again.`);
        }
      }
    }
  }
}
