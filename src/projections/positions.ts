import type { Position } from '../event-store/event-store.port';

/**
 * Events after `from` up to `to`. Exact on SQLite, where a position is the event's sequence
 * number, counted from 1 (START is before it).
 */
export const eventsBetween = (from: Position, to: Position): number =>
  Math.max(0, Number(to.commit - (from.commit < 0n ? 0n : from.commit)));

/**
 * A position for people and JSON: the sequence number, or commit/prepare where they differ; "0"
 * before the first event (SQLite counts events from 1).
 */
export function formatPosition(position: Position | null): string {
  if (!position || position.commit < 0n) return '0';
  return position.commit === position.prepare ? `${position.commit}` : `${position.commit}/${position.prepare}`;
}
