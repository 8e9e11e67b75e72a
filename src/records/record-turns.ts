const noop = () => undefined;

/**
 * Per-record turns: work on one record in this process runs once the work asked for before it has
 * settled, so that writes here do not race each other for the same revision (one refused by the
 * store, read again and decided again); only other processes' appends can refuse one.
 */
export class RecordTurns {
  /** By record id: the last work asked for, settled or not. */
  private readonly underWay = new Map<string, Promise<void>>();

  run<T>(id: string, work: () => Promise<T>): Promise<T> {
    const before = this.underWay.get(id);
    const mine = before ? before.then(work) : work();
    const settled = mine.then(noop, noop);
    this.underWay.set(id, settled);
    void settled.then(() => {
      if (this.underWay.get(id) === settled) this.underWay.delete(id);
    });
    return mine;
  }
}
