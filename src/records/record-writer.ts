import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors';
import {
  AppendResult,
  DomainEvent,
  EventMetadata,
  EventStore,
  Position,
  WrongExpectedRevisionError,
} from '../event-store/event-store.port';
import type { RequestContext } from '../http/request-context';
import type { ProjectionsService } from '../projections/projections.service';
import { evolveRecord, ownedRecord, RecordKind, RecordState, streamIdOf } from './record';

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
 * What an If-Match header asks of the record: that it exists ('*'), or that its current revision is
 * one of these. Absent, the write applies to whatever revision it finds.
 */
export type Precondition = '*' | number[];

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

  async load(id: string): Promise<{ state: RecordState | null; revision: number | 'no_stream'; position?: Position }> {
    let state: RecordState | null = null;
    const events = await this.eventStore.readStream(streamIdOf(this.kind, id));
    for (const event of events) state = evolveRecord(this.kind, state, event);
    const last = events[events.length - 1];
    return { state, revision: last ? last.revision : 'no_stream', position: last?.position };
  }

  /**
   * Returns the append, or null when the decision was to change nothing. A precondition is checked
   * on every attempt, so a writer that lost a race to another one answers 412, not a silent retry.
   */
  async write(
    id: string,
    context: RequestContext,
    causationId: string,
    decide: Decision,
    precondition?: Precondition,
  ): Promise<AppendResult | null> {
    for (let attempt = 1; ; attempt++) {
      const { state, revision, position } = await this.load(id);
      if (precondition) this.checkPrecondition(ownedRecord(this.kind, state, context.accountId), precondition);
      const events = await decide(state);
      if (events.length === 0) {
        // Nothing to append, but the answer is read from the read models: they must show this state.
        if (position) await this.projections.waitFor(position);
        return null;
      }
      try {
        const written = await this.eventStore.appendToStream(
          streamIdOf(this.kind, id),
          withMetadata(events, eventMetadata(context, causationId)),
          revision,
        );
        await this.projections.waitFor(written.position);
        return written;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
        if (attempt === MAX_ATTEMPTS) {
          throw new ApiError('CONFLICT', `The ${this.kind.label.toLowerCase()} is being changed by others right now; try again.`);
        }
      }
    }
  }

  private checkPrecondition(record: RecordState, precondition: Precondition): void {
    if (precondition === '*' || precondition.includes(record.revision)) return;
    throw new ApiError(
      'PRECONDITION_FAILED',
      `The ${this.kind.label.toLowerCase()} has changed since: its current ETag is "${record.revision}".`,
    );
  }
}
