import { LRUCache } from 'lru-cache';
import { siblings } from '../instance';
import type { Folded } from './handle-command';
import { RecordKind, recordIdOf, streamIdOf } from './record';

/** Folded records a writer keeps between writes, least recently used dropped first. */
export const FOLDED_RECORDS_KEPT = 10_000;

/** A fold kept, and whether another worker has appended to its stream since (its news). */
type Kept = Folded & { behind?: true };

/**
 * The folds a writer keeps, so a write costs the same for a record with a long history as for a new
 * one: the next write decides on the kept fold without reading, or reads only the events after it.
 * Events are never changed or removed, so a kept fold plus the events after it is the fold of the
 * whole stream, whoever appended them: other instances' appends are read as the stream's tail, and
 * a write racing one of theirs is refused by the expected revision. Other workers of this service
 * (WORKERS) say which streams they appended to: a fold of one of them is marked behind, and read up
 * to date before the next write decides on it rather than refused once and decided again.
 */
export class FoldedRecords {
  private readonly kept: LRUCache<string, Kept>;
  private readonly streamPrefix: string;
  private readonly unhear: () => void;

  constructor(
    private readonly kind: RecordKind,
    keepAtMost = FOLDED_RECORDS_KEPT,
  ) {
    this.kept = new LRUCache({ max: keepAtMost });
    this.streamPrefix = streamIdOf(kind, '');
    this.unhear = siblings.hear('appended', (streams) => this.markBehind(streams));
  }

  close(): void {
    this.unhear();
  }

  /** The fold to read on from. Before that read: news of an append heard while it runs marks it behind again. */
  readFrom(id: string): Folded | undefined {
    const kept = this.kept.get(id);
    if (kept) delete kept.behind;
    return kept;
  }

  /** The fold kept, unless another worker has appended to the record since. */
  upToDate(id: string): Folded | undefined {
    const kept = this.kept.get(id);
    return kept?.behind ? undefined : kept;
  }

  keep(id: string, folded: Folded): void {
    if (folded.revision === 'no_stream') return;
    const kept = this.kept.peek(id);
    // A slower concurrent load may bring an older fold: keep the newer.
    if (kept && (kept.revision as number) > folded.revision) return;
    this.kept.set(id, { ...folded });
  }

  private markBehind(streams: string[]): void {
    for (const streamId of streams) {
      if (!streamId.startsWith(this.streamPrefix)) continue;
      const kept = this.kept.peek(recordIdOf(this.kind, streamId));
      if (kept) kept.behind = true;
    }
  }
}
