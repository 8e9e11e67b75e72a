import { comparePositions, type Position } from '../event-store/event-store.port';

interface Waiter {
  position: Position;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** Requests waiting for a read model to reach a position (read-your-writes), each with its deadline. */
export class PositionWaiters {
  private waiters: Waiter[] = [];

  get size(): number {
    return this.waiters.length;
  }

  /** Resolves once `reached` is called with `position` or past it; rejects with `late()`'s error after `timeoutMs`. */
  add(position: Position, timeoutMs: number, late: () => Error): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(late());
      }, timeoutMs);
      const waiter: Waiter = {
        position,
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
      this.waiters.push(waiter);
    });
  }

  reached(position: Position): void {
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (comparePositions(position, w.position) >= 0) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  rejectAll(error: Error): void {
    for (const w of this.waiters) w.reject(error);
    this.waiters = [];
  }
}
