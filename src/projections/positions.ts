import type { Position } from '../event-store/event-store.port';

/** A position for people and JSON: "start", the sequence number, or commit/prepare where they differ. */
export function formatPosition(position: Position | null): string {
  if (!position || position.commit < 0n) return 'start';
  return position.commit === position.prepare ? `${position.commit}` : `${position.commit}/${position.prepare}`;
}
