import { createHash } from 'node:crypto';
import { comparePositions, Position, START } from '../event-store/event-store.port';
import {
  CollectionSchema,
  GenerationReplacedError,
  MatchKind,
  ParkedEvent,
  ParkedStream,
  ParkRequest,
  RebuildBehindError,
  SkippedEvent,
} from './read-store.port';

/**
 * The rules of a collection's generations (see the port), written once for every adapter: each
 * adapter reads its state its own way (SQLite in its transaction, MongoDB from its documents) and
 * applies it its own way (SQLite's transaction, MongoDB's conditional updates), and asks here what
 * is allowed.
 */

/** The generations of a collection in use: the one reads go to, and the one a rebuild fills. */
export interface InUse {
  live: number;
  building: number | null;
}

/**
 * A commit, or a read naming its generation (a projector's), goes only to the live or the building
 * generation: any other was replaced by a rebuild, and its projector must move to the live one.
 */
export function assertWritable(collection: string, inUse: InUse, generation: number): 'live' | 'building' {
  if (generation === inUse.live) return 'live';
  if (generation === inUse.building) return 'building';
  throw new GenerationReplacedError(collection, generation);
}

/** The checkpoint a commit at `position` leaves: it only moves forward, whatever order writers arrive in. */
export function nextCheckpoint(saved: Position | null, position: Position): Position {
  return saved && comparePositions(position, saved) <= 0 ? saved : position;
}

/**
 * Whether `generation` may be promoted over the live one, given both checkpoints (none counts as
 * START): it must be the building one, and not behind the live one.
 */
export function assertPromotable(collection: string, inUse: InUse, generation: number, built: Position | null, live: Position | null): void {
  if (inUse.building !== generation || inUse.live === generation) throw new GenerationReplacedError(collection, generation);
  if (comparePositions(built ?? START, live ?? START) < 0) throw new RebuildBehindError(collection);
}

/** The number a new rebuild takes: above every generation the collection ever had, so none is reused. */
export function nextGeneration(numbers: number[]): number {
  return Math.max(0, ...numbers) + 1;
}

/**
 * The fingerprint of what shapes a generation's stored rows: its filters and their match kinds
 * (each filter a column or a `match` value, lowercased or not, and an index). Two schemas with the
 * same fingerprint store the same rows; a live generation whose fingerprint is not the code's
 * schema's is rebuilt at start. The version changes should the layout of rows change otherwise.
 */
export function schemaFingerprint(schema: CollectionSchema): string {
  // In a stable order: the order of the code's object does not shape the rows.
  const filters = Object.entries(schema.filters).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const layout = JSON.stringify({ version: 1, filters });
  return createHash('sha256').update(layout).digest('hex').slice(0, 16);
}

/**
 * The schema a generation was built with, from what its record keeps: one made before generations
 * kept it is taken as built with the code's schema (no rebuild on upgrade), and stamped so.
 */
export function generationSchema(current: CollectionSchema, kept: Record<string, MatchKind> | null | undefined): CollectionSchema {
  return kept ? { name: current.name, filters: kept } : current;
}

/** Whether a generation built with `fingerprint` stores rows as `schema` says (none kept: taken as so). */
export function builtWith(fingerprint: string | null, schema: CollectionSchema): boolean {
  return fingerprint === null || fingerprint === schemaFingerprint(schema);
}

/** The longest error a parked event keeps: a fold's message may quote a whole payload. */
export const PARKED_ERROR_LENGTH = 500;

export function boundedError(error: string): string {
  return error.length <= PARKED_ERROR_LENGTH ? error : `${error.slice(0, PARKED_ERROR_LENGTH - 1)}…`;
}

/**
 * What parking `event` leaves of its stream (`stream`: as parked so far, null if not): the stream
 * parked at it, or one more event waiting behind the first; null when it changes nothing (an event
 * at or before the last one counted: a batch folded again after a crash).
 */
export function parkInto(stream: ParkedStream | null, streamId: string, event: ParkedEvent, now: number): ParkedStream | null {
  if (!stream)
    return { streamId, first: { ...event, error: boundedError(event.error) }, parkedAt: now, waiting: 0, lastRevision: event.revision, request: null };
  if (event.revision <= stream.lastRevision) return null;
  return { ...stream, waiting: stream.waiting + 1, lastRevision: event.revision };
}

/** The request on a stream made after a settlement read it (`seen`), which that settlement leaves for the next one; else null. */
export const laterRequest = (stored: ParkedStream, seen: ParkedStream): ParkRequest | null =>
  stored.request && !sameRequest(stored.request, seen.request) ? stored.request : null;

const sameRequest = (a: ParkRequest, b: ParkRequest | null) => b !== null && a.at === b.at && a.action === b.action && a.by === b.by;

/** A parked stream or skipped event as the stores keep it in JSON: positions as strings. */
export function parkedToJson(stream: ParkedStream | SkippedEvent): string {
  return JSON.stringify(stream, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

export function parkedFromJson<T extends ParkedStream | SkippedEvent>(json: string): T {
  const parsed = JSON.parse(json) as T & { first?: { position: { commit: string; prepare: string } }; position?: { commit: string; prepare: string } };
  const position = (p: { commit: string; prepare: string }) => ({ commit: BigInt(p.commit), prepare: BigInt(p.prepare) });
  if (parsed.first) parsed.first = { ...parsed.first, position: position(parsed.first.position) } as never;
  if (parsed.position) parsed.position = position(parsed.position) as never;
  return parsed;
}
