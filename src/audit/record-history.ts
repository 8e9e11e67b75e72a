import { ImportedBy, occurredAt, StoredEvent } from '../event-store/event-store.port';
import { evolveRecord, Fields, RecordKind, RecordState } from '../records/record';

/** One entry of a record's history, as GET /v1/<records>/{id}/history answers it. */
export interface HistoryEntry {
  event: string;
  revision: number;
  /** ISO-8601 UTC with milliseconds: when the event happened (occurredAt). */
  occurred: string;
  /** The account whose request appended the event. */
  actor: string;
  /**
   * Each field the event changed, from its value before to its value after ('' is "no value");
   * null for each field an event of an erased record set.
   */
  changes: Record<string, { from: string; to: string } | null>;
  /** On the create of a record moved in by the CLI's import: who ran it, when, from which file. */
  imported?: ImportedBy;
}

/**
 * A page of a record's stream as its history, oldest first. `before` is the record's fold up to
 * the page's first event (null when the page starts at the create). Each event is folded with the
 * same evolveRecord the write side and the read models use, and `changes` compares the fields
 * before and after it: so a Created event shows every field it set going from '' to its value, an
 * Updated event the fields it changed, and a Deleted event no changes (the fields are not touched;
 * the record just stops being). Once the record is `erased`, every entry keeps its event, revision,
 * time and actor, and names the fields it set with null for each value: the values are gone
 * (events written before encryption still hold theirs, so they are not shown either).
 */
export function recordHistory(kind: RecordKind, events: StoredEvent[], before: RecordState | null, erased: boolean): HistoryEntry[] {
  let state = before;
  return events.map((event) => {
    let changes: HistoryEntry['changes'];
    if (erased) {
      changes = Object.fromEntries(Object.keys(event.data).map((field) => [field, null]));
    } else {
      const fields = state?.fields ?? {};
      state = evolveRecord(kind, state, event);
      changes = fieldChanges(fields, state.fields);
    }
    const entry: HistoryEntry = {
      event: event.type,
      revision: event.revision,
      occurred: occurredAt(event).toISOString(),
      actor: event.metadata.accountId,
      changes,
    };
    const { imported } = event.metadata;
    if (imported) entry.imported = { by: imported.by, at: imported.at, file: imported.file };
    return entry;
  });
}

export function fieldChanges(before: Fields, after: Fields): Record<string, { from: string; to: string }> {
  const changes: Record<string, { from: string; to: string }> = {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = before[field] ?? '';
    const to = after[field] ?? '';
    if (from !== to) changes[field] = { from, to };
  }
  return changes;
}

/** The second (epoch seconds) an event happened in. */
const secondOf = (event: StoredEvent) => Math.floor(occurredAt(event).getTime() / 1000);

/**
 * The revision a record stood at at the end of second `asOf`: that of its last event that happened
 * at or before then, or -1 when its `first` happened later. A stream's events are in time order
 * (its appends are serialized, each stamped as it is decided), so this is a binary search between
 * `first` and `last` that reads about log2(revisions) events with `eventAt`, one at a time.
 */
export async function revisionAsOf(asOf: number, first: StoredEvent, last: StoredEvent, eventAt: (revision: number) => Promise<StoredEvent>): Promise<number> {
  if (secondOf(first) > asOf) return -1;
  if (secondOf(last) <= asOf) return last.revision;
  // Invariant: the event at `stored` was stored by then, the one at `later` after.
  let stored = first.revision;
  let later = last.revision;
  while (later - stored > 1) {
    const middle = Math.floor((stored + later) / 2);
    if (secondOf(await eventAt(middle)) <= asOf) stored = middle;
    else later = middle;
  }
  return stored;
}
