import type { StoredEvent } from '../event-store/event-store.port';
import { evolveRecord, Fields, RecordKind, RecordState } from '../records/record';

/** One entry of a record's history, as GET /v1/<records>/{id}/history answers it. */
export interface HistoryEntry {
  event: string;
  revision: number;
  /** ISO-8601 UTC with milliseconds: when the event was stored. */
  occurred: string;
  /** The account whose request appended the event. */
  actor: string;
  /**
   * Each field the event changed, from its value before to its value after ('' is "no value");
   * null for each field an event of an erased record set.
   */
  changes: Record<string, { from: string; to: string } | null>;
}

/**
 * A record's stream as its history, oldest first. Each event is folded with the same evolveRecord the
 * write side and the read models use, and `changes` compares the fields before and after it: so a
 * Created event shows every field it set going from '' to its value, an Updated event the fields it
 * changed, and a Deleted event no changes (the fields are not touched; the record just stops being).
 * Once the record is erased, every entry keeps its event, revision, time and actor, and names the
 * fields it set with null for each value: the values are gone (events written before encryption
 * still hold theirs, so they are not shown either).
 */
export function recordHistory(kind: RecordKind, events: StoredEvent[]): HistoryEntry[] {
  const erased = isErased(kind, events);
  let state: RecordState | null = null;
  return events.map((event) => {
    const before = state?.fields ?? {};
    state = evolveRecord(kind, state, event);
    return {
      event: event.type,
      revision: event.revision,
      occurred: event.recordedAt.toISOString(),
      actor: event.metadata.accountId,
      changes: erased ? Object.fromEntries(Object.keys(event.data).map((field) => [field, null])) : fieldChanges(before, state.fields),
    };
  });
}

/** Whether the stream ends in its erasure: nothing of it may be shown then. */
export const isErased = (kind: RecordKind, events: StoredEvent[]) => events[events.length - 1]?.type === kind.events.erased;

export function fieldChanges(before: Fields, after: Fields): Record<string, { from: string; to: string }> {
  const changes: Record<string, { from: string; to: string }> = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = before[field] ?? '';
    const to = after[field] ?? '';
    if (from !== to) changes[field] = { from, to };
  }
  return changes;
}

/**
 * The record as it stood at the end of second `asOf` (epoch seconds): its stream folded up to the
 * last event stored at or before then. null when it did not exist yet, or has been erased since:
 * an erased record does not exist at any time.
 */
export function recordAsOf(kind: RecordKind, events: StoredEvent[], asOf: number): RecordState | null {
  if (isErased(kind, events)) return null;
  let state: RecordState | null = null;
  for (const event of events) {
    if (Math.floor(event.recordedAt.getTime() / 1000) > asOf) break;
    state = evolveRecord(kind, state, event);
  }
  return state;
}
