import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import { DATA_KEYS, DataKeys, digest, open, seal } from '../sealing/data-keys';
import { conflict, Refusal, validationFailed } from '../errors';
import { EVENT_STORE, EventStore, NewEventMetadata, SEALED_SCHEMA_VERSION, StoredEvent, WrongExpectedRevisionError } from '../event-store/event-store.port';
import type { CommandContext } from '../records/command-context';
import { Fields, RecordKind, streamIdOf } from '../records/record';
import { eventMetadata } from '../records/record-writer';
import { withMetadata } from '../records/handle-command';
import { StoreUnavailableError } from '../storage/store-unavailable.error';

/** How long a key holds its first response. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const KEY = /^[\x21-\x7E]{1,255}$/;
const MAX_ATTEMPTS = 10;
const CLAIMED = 'IdempotencyKeyClaimed';
const ANSWERED = 'IdempotencyKeyAnswered';

/** What a create answers and a retry replays: the response body (with the id) and the ETag's revision. */
export interface CreatedResponse {
  body: object;
  revision: number;
}

interface Claim {
  /**
   * "The same body": an HMAC, under the new record's data key, of the sha256 of the resource and the
   * request's fields, so that no guessable hash of personal data is kept (the plain sha256 before
   * schema 2, which sealPlaintextEvents turns into this).
   */
  fingerprint: string;
  /** The id the create makes; a retry after a crash creates this same one. */
  recordId: string;
  /** The collection it creates in ('customers', 'profiles'); claims made before this was kept have none. */
  resource?: string;
}

/** The stored answer: its body sealed with the new record's data key (in plain before schema 2). */
type StoredAnswer = { revision: number; sealed: string } | CreatedResponse;

/**
 * The claim in force at `now` and its answer, if it has one yet. A claim older than the TTL has
 * expired: the key is free again.
 */
export function liveClaim(events: StoredEvent[], now: number): { claim: StoredEvent; answer?: StoredEvent } | undefined {
  const at = events.findLastIndex((e) => e.type === CLAIMED);
  if (at < 0 || now - events[at].recordedAt.getTime() >= IDEMPOTENCY_TTL_MS) return undefined;
  return { claim: events[at], answer: events.slice(at + 1).find((e) => e.type === ANSWERED) };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The claim an attempt goes by, the revision it is at, and its record's data key (none before schema 2). */
interface Claimed {
  claim: Claim;
  revision: number;
  dataKey?: Buffer;
}

/** A create under an Idempotency-Key: what every attempt at it compares and writes. */
interface KeyedCreate {
  kind: RecordKind;
  /** `idempotency-<sha256(account, key)>` */
  streamId: string;
  resource: string;
  /** The sha256 of the resource and the request's fields: the fingerprint before schema 2, its HMAC's input since. */
  requestHash: string;
  metadata: NewEventMetadata;
}

function keyedCreate(context: CommandContext, key: string, request: { kind: RecordKind; fields: Fields }): KeyedCreate {
  // The resource as the first version named it ('customers'), so claims made before still compare.
  const resource = `${request.kind.label.toLowerCase()}s`;
  const fields = Object.entries(request.fields).sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    kind: request.kind,
    streamId: `idempotency-${sha256(`${context.accountId}\n${key}`)}`,
    resource,
    requestHash: sha256(JSON.stringify([resource, fields])),
    metadata: eventMetadata(context, randomUUID()),
  };
}

const createdRecordErased = (kind: RecordKind) =>
  new Refusal('gone', `The ${kind.label.toLowerCase()} this Idempotency-Key created has been erased; use a new key to create a new one.`, [
    { field: 'Idempotency-Key', message: 'Idempotency-Key belongs to an erased record' },
  ]);

const usedWithAnotherRequest = () =>
  conflict('This Idempotency-Key was used with a different request; use a new key for a new request.', [
    { field: 'Idempotency-Key', message: 'Idempotency-Key was used with a different request body' },
  ]);

const usedOnAnotherCollection = (collection: string) =>
  conflict(`This Idempotency-Key was used to create in /v1/${collection}; use a new key for a new request.`, [
    { field: 'Idempotency-Key', message: `Idempotency-Key was used with a create in /v1/${collection}` },
  ]);

/**
 * Idempotency-Key on POST, kept in the event store itself: one stream per account and key,
 * `idempotency-<sha256(account, key)>`. The first attempt claims the key (appending at the revision
 * it read, so of racing attempts one wins) with the body's fingerprint and the id it will create;
 * then creates the record and appends the response. Any later attempt with the key replays that
 * response, or, finding a claim without one (an attempt in flight, or one that crashed midway), runs
 * the same create with the same id: the record's stream makes that exactly-once, since a create on
 * an existing id appends nothing. The first response appended is the one every attempt answers.
 * The projectors follow only the record kinds' streams (`profile-`, `customer-`), so these never reach a read model.
 * The answer holds the record's personal data, so it is sealed with the record's key: once the
 * record is erased, a retry finds nothing to replay and answers 409.
 */
@Injectable()
export class IdempotentCreates {
  constructor(
    @Inject(EVENT_STORE) private readonly eventStore: EventStore,
    @Inject(DATA_KEYS) private readonly keys: DataKeys,
  ) {}

  /** Runs `create` with a fresh record id, or under a key at most once per account and key. */
  async run(
    context: CommandContext,
    key: string | undefined,
    request: { kind: RecordKind; fields: Fields },
    create: (recordId: string) => Promise<CreatedResponse>,
  ): Promise<CreatedResponse> {
    if (key === undefined) return create(await this.newRecordId(request.kind));
    if (!KEY.test(key)) {
      throw validationFailed([{ field: 'Idempotency-Key', message: 'Idempotency-Key must be 1 to 255 printable ASCII characters, no spaces' }]);
    }
    const keyed = keyedCreate(context, key, request);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const events = await this.eventStore.readStream(keyed.streamId);
      const live = liveClaim(events, Date.now());
      const claimed = live ? await this.checkClaim(keyed, live.claim) : await this.claim(keyed, events);
      if (!claimed) continue; // Another attempt claimed the key first: go by its claim.
      if (live?.answer) return openAnswer(live.answer.data as unknown as StoredAnswer, claimed.dataKey, keyed.streamId);
      const response = await create(claimed.claim.recordId);
      if (await this.answer(keyed, claimed, response)) return response;
      // Another attempt answered first: the next turn replays its answer.
    }
    throw conflict('Other requests with this Idempotency-Key are in progress right now; try again.');
  }

  /**
   * The claim in force, once it is known to be for this request and its record not erased; its
   * record's data key, unless it was made before schema 2.
   */
  private async checkClaim(keyed: KeyedCreate, event: StoredEvent): Promise<Claimed> {
    const claim = event.data as unknown as Claim;
    // Before the record's key is looked up: under this collection's name it would not be found.
    if (claim.resource !== undefined && claim.resource !== keyed.resource) throw usedOnAnotherCollection(claim.resource);
    const recordStream = streamIdOf(keyed.kind, claim.recordId);
    let dataKey: Buffer | undefined;
    if (event.metadata.schemaVersion >= SEALED_SCHEMA_VERSION) {
      const current = await this.keys.current(recordStream);
      // No key, not even a destroyed one's tombstone: made on another instance and not shown
      // yet where this read went (unavailable), unless the record's erasure says it is gone.
      if (current === undefined && !(await this.recordErased(keyed.kind, recordStream))) {
        throw new StoreUnavailableError(this.keys.store.name, `no data key for ${recordStream}: not there yet`);
      }
      dataKey = current ?? undefined;
      if (!dataKey) throw createdRecordErased(keyed.kind);
    } else if (await this.recordErased(keyed.kind, recordStream)) {
      // A claim from before schema 2, its answer in plain (EventStoreDB cannot seal old events):
      // no key to miss, so the record's own stream says whether it was erased since.
      throw createdRecordErased(keyed.kind);
    }
    if (claim.fingerprint !== (dataKey ? digest(dataKey, keyed.requestHash) : keyed.requestHash)) throw usedWithAnotherRequest();
    return { claim, revision: event.revision, dataKey };
  }

  /** Claims the key for a new record, after the key's `events`; undefined when another attempt claimed it first. */
  private async claim(keyed: KeyedCreate, events: StoredEvent[]): Promise<Claimed | undefined> {
    const recordId = await this.newRecordId(keyed.kind);
    const dataKey = await this.keys.forWriting(streamIdOf(keyed.kind, recordId));
    const claim: Claim = { fingerprint: digest(dataKey, keyed.requestHash), recordId, resource: keyed.resource };
    try {
      const claimed = await this.eventStore.appendToStream(
        keyed.streamId,
        withMetadata([{ type: CLAIMED, data: { ...claim } }], keyed.metadata),
        events.length ? events[events.length - 1].revision : 'no_stream',
      );
      return { claim, revision: claimed.revision, dataKey };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      return undefined;
    }
  }

  /** Appends the create's response to its claim; false when another attempt answered first. */
  private async answer(keyed: KeyedCreate, { revision, dataKey }: Claimed, response: CreatedResponse): Promise<boolean> {
    // A claim made before schema 2 is answered as it was made: in plain.
    const answer: StoredAnswer = dataKey ? { revision: response.revision, sealed: seal(dataKey, JSON.stringify(response.body), keyed.streamId) } : response;
    try {
      await this.eventStore.appendToStream(keyed.streamId, withMetadata([{ type: ANSWERED, data: { ...answer } }], keyed.metadata), revision);
      return true;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      return false;
    }
  }

  private newRecordId(kind: RecordKind): Promise<string> {
    return this.keys.newRecordId(streamIdOf(kind, ''));
  }

  /** Whether the record's stream ends with its erasure (nothing follows one): its last event only. */
  private async recordErased(kind: RecordKind, streamId: string): Promise<boolean> {
    return (await this.eventStore.readLastEvent(streamId))?.type === kind.events.erased;
  }
}

function openAnswer(answer: StoredAnswer, dataKey: Buffer | undefined, streamId: string): CreatedResponse {
  if (!('sealed' in answer)) return answer;
  return { revision: answer.revision, body: JSON.parse(open(dataKey!, answer.sealed, streamId)) as object };
}
