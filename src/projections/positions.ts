import type { Position } from '../event-store/event-store.port';

/**
 * A position for people and JSON: the sequence number, or commit/prepare where they differ; "0"
 * before the first event.
 */
export function formatPosition(position: Position | null): string {
  if (!position || position.commit < 0n) return '0';
  return position.commit === position.prepare ? `${position.commit}` : `${position.commit}/${position.prepare}`;
}
