import { createHash } from 'node:crypto';
import { comparePositions, EventStore, Position, START, StoredEvent, UnreadableEventError } from '../event-store/event-store.port';
import type { ReadDocument, ReadDocuments, ReadGenerations } from '../read-store/read-store.port';
import { formatPosition } from './positions';
import { follows, type Projection } from './projection';
import { rebuildProjections, RebuildInterruptedError, type RebuildProgress } from './rebuild';

/** Rows read per page, from the fold and from the read model alike. */
const PAGE = 1000;
/** Records listed by name at most (differing or parked); past it they are counted only. */
export const MAX_LISTED = 10_000;
/** How often a record read while it changes is read again, to see it and the checkpoint in step (see readInStep). */
const IN_STEP_ATTEMPTS = 5;
const MASK = (1n << 64n) - 1n;

/** Rows of a read model for one account, and their checksum: the sum of each row's digest, so the order rows are read in does not matter. */
export interface VerifiedSide {
  rows: number;
  checksum: string;
}

/** One read model's rows of one account: as the events fold them, and as the read model holds them. */
export interface AccountVerification {
  readModel: string;
  accountId: string;
  events: VerifiedSide;
  stored: VerifiedSide;
  differing: number;
  parked: number;
}

/**
 * A record (a row) the read model does not hold as its events fold it: missing (the events make it,
 * the read model lacks it), extra (no event makes it), differs (`fields` names what differs: never
 * a value), unfoldable (one of its events cannot be folded, yet its stream is not parked), or
 * unreadable (its events cannot be read now).
 */
export interface VerifyDifference {
  readModel: string;
  accountId: string;
  id: string;
  streamId: string;
  problem: 'missing' | 'extra' | 'differs' | 'unfoldable' | 'unreadable';
  fields: string[];
}

/**
 * A parked stream (projections parked): its row holds the events before the parked one (at
 * `revision`), as expected. Its account is '' where neither a row nor its first event tells it.
 */
export interface VerifyParked {
  readModel: string;
  accountId: string;
  streamId: string;
  revision: number;
}

export interface VerifyReport {
  /** Whether every record agrees (parked ones included, as they should be). */
  agree: boolean;
  /** The event store's position the events were folded to. */
  position: string;
  accounts: AccountVerification[];
  differences: VerifyDifference[];
  parked: VerifyParked[];
  /** Records differing or parked past MAX_LISTED, counted but not listed. */
  unlisted: number;
}

export interface VerifyOptions {
  signal: AbortSignal;
  /** The fold's progress. */
  onProgress?: (progress: RebuildProgress) => void;
  /** The comparison's: rows compared so far of a read model, and whether that is all of them. */
  onCompared?: (readModel: string, rows: number, done: boolean) => void;
  maxListed?: number;
}

/**
 * Folds every event again into `scratch` (an empty read store of its own: the live one is not
 * touched), then compares each read model with it, record by record in id order, a page at a time
 * from both (memory stays bounded whatever the stores hold).
 *
 * The service may be writing meanwhile, so the read model and the fold are not at one position. A
 * row equal to the fold's agrees; any other is checked again alone: its stream is read and folded
 * up to the read model's checkpoint, or to the row's own revision when the row is further (a write
 * the fold did not reach), and compared with the row read again in step with that checkpoint. So a
 * write made during the verify, or one the read model has not folded yet, is no difference; a row
 * is counted on both sides as it was compared, so the two checksums agree exactly when no row differs.
 * The events an operator skipped for good (projections skip) are left out of that fold; a parked
 * stream's row is compared with the events before its first parked one, and reported as parked.
 */
export async function verifyReadModels(
  readModels: Projection[],
  eventStore: EventStore,
  live: ReadDocuments & ReadGenerations,
  scratch: ReadDocuments & ReadGenerations,
  options: VerifyOptions,
): Promise<VerifyReport> {
  for (const projection of readModels) {
    await live.ensureCollection(projection.schema);
    await scratch.ensureCollection(projection.schema);
  }
  const interrupted = () => new RebuildInterruptedError('Verify interrupted: nothing was changed');
  await rebuildProjections(readModels, eventStore, scratch, { signal: options.signal, graceMs: 0, park: true, onProgress: options.onProgress }).catch(
    (error: unknown) => {
      throw error instanceof RebuildInterruptedError ? interrupted() : error;
    },
  );
  const folded = (await scratch.status(readModels[0].schema.name)).live.position;
  const tally = new Tally(options.maxListed ?? MAX_LISTED);
  for (const projection of readModels) {
    const checker = new RecordChecker(projection, eventStore, live);
    const collection = projection.schema.name;
    // Their rows are checked alone, to be listed as parked (the fold parks them too).
    const parked = new Set((await live.parked(collection, (await live.status(collection)).live.generation)).map((p) => p.streamId));
    let compared = 0;
    for await (const [fromEvents, stored] of mergedById(scratch, live, collection)) {
      if (options.signal.aborted) throw interrupted();
      const same = fromEvents && stored && canonical(fromEvents) === canonical(stored) && !parked.has(projection.sourceOf(stored).streamId);
      if (same) tally.agreed(projection, fromEvents);
      else tally.checked(projection, await checker.check(fromEvents, stored));
      if (++compared % PAGE === 0) options.onCompared?.(projection.name, compared, false);
    }
    options.onCompared?.(projection.name, compared, true);
    // Parked streams with no row to check (parked at their first event; the feed's, whose parked events have none).
    for (const stream of await live.parked(collection, (await live.status(collection)).live.generation)) {
      if (!tally.listedParked(projection, stream.streamId))
        tally.parkedAlone(projection, stream.streamId, stream.first.revision, await accountOf(eventStore, stream.streamId));
    }
  }
  return tally.report(readModels, formatPosition(folded));
}

/** What a record's check found: its row as its events fold it and as stored, agreeing or not. */
interface Checked {
  id: string;
  accountId: string;
  streamId: string;
  events: ReadDocument | null;
  stored: ReadDocument | null;
  problem?: VerifyDifference['problem'];
  /** The revision of its stream's first parked event, when parked. */
  parkedAt?: number;
}

/** Checks one record again alone, at the read model's checkpoint (see verifyReadModels). */
class RecordChecker {
  private readonly collection: string;

  constructor(
    private readonly projection: Projection,
    private readonly eventStore: EventStore,
    private readonly live: ReadDocuments & ReadGenerations,
  ) {
    this.collection = projection.schema.name;
  }

  async check(fromEvents: ReadDocument | null, stored: ReadDocument | null): Promise<Checked> {
    const { projection } = this;
    const id = (fromEvents ?? stored)!.id;
    const { streamId, revision } = projection.sourceOf((fromEvents ?? stored)!);
    const known = typeof streamId === 'string' && follows(projection, streamId) && (revision === undefined || Number.isSafeInteger(revision));
    const { row, checkpoint, generation } = await this.readInStep(id);
    const found = known ? (await this.live.parked(this.collection, generation)).find((p) => p.streamId === streamId) : undefined;
    // The events the read model holds of a parked stream: those before its first parked one.
    const parkedAt = found && (revision === undefined || revision >= found.first.revision) ? found.first.revision : undefined;
    const skipped = new Set(
      (await this.live.skipped(this.collection)).filter((s) => s.generation === generation && s.streamId === streamId).map((s) => s.revision),
    );
    const accountId = (row ?? fromEvents ?? stored)!.accountId;
    const checked = { id, accountId, streamId: String(streamId), parkedAt };
    let events: StoredEvent[];
    try {
      if (!known || parkedAt === 0 || (revision !== undefined && parkedAt !== undefined)) events = [];
      else if (revision !== undefined) events = await this.eventStore.readStream(streamId, revision, 1);
      else events = await this.eventStore.readStream(streamId, 0, parkedAt);
    } catch (error) {
      if (!(error instanceof UnreadableEventError)) throw error;
      return { ...checked, events: null, stored: row, problem: 'unreadable' };
    }
    // Events the read model has reached: up to its checkpoint, or the row's own revision where the row is further.
    const reached = (e: StoredEvent) =>
      comparePositions(e.position, checkpoint) <= 0 || (row !== null && (projection.documents === 'event' || e.revision <= row.revision));
    let folded: ReadDocument | null = null;
    let unfoldable = false;
    for (const event of events) {
      if (!reached(event) || (projection.documents === 'event' && String(event.position.prepare) !== id)) break;
      if (skipped.has(event.revision)) continue;
      try {
        if (event.unreadable !== undefined) throw new Error(event.unreadable);
        folded = projection.evolve(projection.documents === 'event' ? null : folded, event);
      } catch {
        unfoldable = true;
        break;
      }
    }
    if (folded && row ? canonical(folded) === canonical(row) : folded === row) return { ...checked, events: folded, stored: row };
    return { ...checked, events: folded, stored: row, problem: unfoldable ? 'unfoldable' : !row ? 'missing' : !folded ? 'extra' : 'differs' };
  }

  /**
   * The row, and a checkpoint it is in step with: read before and after the checkpoint, the same
   * both times (a commit writes rows before or with its checkpoint, never after), else again.
   */
  private async readInStep(id: string): Promise<{ row: ReadDocument | null; checkpoint: Position; generation: number }> {
    const read = async () => (await this.live.getMany(this.collection, [id])).get(id) ?? null;
    let row = await read();
    for (let attempt = 1; ; attempt++) {
      const { live } = await this.live.status(this.collection);
      const again = await read();
      if (attempt === IN_STEP_ATTEMPTS || (row === null ? again === null : again !== null && canonical(row) === canonical(again))) {
        return { row: again, checkpoint: live.position ?? START, generation: live.generation };
      }
      row = again;
    }
  }
}

/** Each id of either store's read model, in id order (bytes of UTF-8, as both stores order them), with its row in each. */
async function* mergedById(fromEvents: ReadDocuments, stored: ReadDocuments, collection: string): AsyncGenerator<[ReadDocument | null, ReadDocument | null]> {
  const a = rows(fromEvents, collection);
  const b = rows(stored, collection);
  let x = await a.next();
  let y = await b.next();
  while (!x.done || !y.done) {
    const order = x.done ? 1 : y.done ? -1 : byteOrder(x.value.id, y.value.id);
    yield [order <= 0 ? (x.value as ReadDocument) : null, order >= 0 ? (y.value as ReadDocument) : null];
    if (order <= 0) x = await a.next();
    if (order >= 0) y = await b.next();
  }
}

async function* rows(store: ReadDocuments, collection: string): AsyncGenerator<ReadDocument, void> {
  for (let after = ''; ;) {
    const page = await store.pageById(collection, after, PAGE);
    yield* page;
    if (page.length < PAGE) return;
    after = page[page.length - 1].id;
  }
}

/** The account of a stream's first event, or '' where it cannot be read. */
async function accountOf(eventStore: EventStore, streamId: string): Promise<string> {
  const [first] = await eventStore.readStream(streamId, 0, 1).catch(() => []);
  return first?.metadata.accountId ?? '';
}

const byteOrder = (a: string, b: string) => (a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b)));

/** A row as compared and summed: what a read model keeps of it, its fields in name order. */
function canonical(d: ReadDocument): string {
  const fields = Object.keys(d.fields)
    .sort()
    .map((name) => [name, d.fields[name]]);
  return JSON.stringify([d.id, d.accountId, d.revision, d.seq, d.deleted, d.created, fields]);
}

const digest = (d: ReadDocument) => createHash('sha256').update(canonical(d)).digest().readBigUInt64BE(0);

/** What differs between two rows of a record: names only, never a value (they are personal data). */
function differingFields(a: ReadDocument, b: ReadDocument): string[] {
  const names = (['accountId', 'revision', 'seq', 'deleted', 'created'] as const).filter((k) => a[k] !== b[k]);
  const fields = [...new Set([...Object.keys(a.fields), ...Object.keys(b.fields)])].sort().filter((f) => a.fields[f] !== b.fields[f]);
  return [...names, ...fields.map((f) => `fields.${f}`)];
}

interface Sums {
  readModel: string;
  accountId: string;
  events: { rows: number; sum: bigint };
  stored: { rows: number; sum: bigint };
  differing: number;
  parked: number;
}

/** The counts and checksums per read model and account, and the records listed. */
class Tally {
  private readonly sums = new Map<string, Sums>();
  private readonly differences: VerifyDifference[] = [];
  private readonly parked: VerifyParked[] = [];
  /** The parked streams listed, by read model. */
  private readonly parkedStreams = new Set<string>();
  private unlisted = 0;

  constructor(private readonly maxListed: number) {}

  agreed(projection: Projection, row: ReadDocument): void {
    const sums = this.of(projection, row.accountId);
    const d = digest(row);
    for (const side of [sums.events, sums.stored]) {
      side.rows++;
      side.sum = (side.sum + d) & MASK;
    }
  }

  checked(projection: Projection, checked: Checked): void {
    const { events, stored, problem, accountId } = checked;
    if (!problem) {
      // With no row on either side, the read model has not reached the record yet: nothing to count.
      if (events) this.agreed(projection, events);
      if (checked.parkedAt !== undefined) this.listParked(projection, checked);
      return;
    }
    const sums = this.of(projection, accountId);
    sums.differing++;
    for (const [side, row] of [
      [sums.events, events],
      [sums.stored, stored],
    ] as const) {
      if (!row) continue;
      side.rows++;
      side.sum = (side.sum + digest(row)) & MASK;
    }
    const fields = events && stored ? differingFields(events, stored) : [];
    this.list(this.differences, { readModel: projection.name, accountId, id: checked.id, streamId: checked.streamId, problem, fields });
  }

  report(readModels: Projection[], position: string): VerifyReport {
    const order = readModels.map((p) => p.name);
    const accounts = [...this.sums.values()]
      .sort((a, b) => order.indexOf(a.readModel) - order.indexOf(b.readModel) || byteOrder(a.accountId, b.accountId))
      .map((s) => ({ ...s, events: side(s.events), stored: side(s.stored) }));
    const agree = accounts.every((a) => a.differing === 0);
    return { agree, position, accounts, differences: this.differences, parked: this.parked, unlisted: this.unlisted };
  }

  listedParked(projection: Projection, streamId: string): boolean {
    return this.parkedStreams.has(`${projection.name}\n${streamId}`);
  }

  parkedAlone(projection: Projection, streamId: string, revision: number, accountId: string): void {
    this.listParked(projection, { accountId, streamId, parkedAt: revision });
  }

  /** Once per stream (the feed has a row per event). */
  private listParked(projection: Projection, { accountId, streamId, parkedAt }: Pick<Checked, 'accountId' | 'streamId' | 'parkedAt'>): void {
    if (this.listedParked(projection, streamId)) return;
    this.parkedStreams.add(`${projection.name}\n${streamId}`);
    if (accountId) this.of(projection, accountId).parked++;
    this.list(this.parked, { readModel: projection.name, accountId, streamId, revision: parkedAt! });
  }

  private list<T>(list: T[], entry: T): void {
    if (this.differences.length + this.parked.length < this.maxListed) list.push(entry);
    else this.unlisted++;
  }

  private of(projection: Projection, accountId: string): Sums {
    const key = `${projection.name}\n${accountId}`;
    let sums = this.sums.get(key);
    if (!sums) {
      sums = { readModel: projection.name, accountId, events: { rows: 0, sum: 0n }, stored: { rows: 0, sum: 0n }, differing: 0, parked: 0 };
      this.sums.set(key, sums);
    }
    return sums;
  }
}

const side = ({ rows, sum }: { rows: number; sum: bigint }): VerifiedSide => ({ rows, checksum: sum.toString(16).padStart(16, '0') });
