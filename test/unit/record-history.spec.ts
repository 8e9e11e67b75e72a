import { fieldChanges, recordHistory, revisionAsOf } from '../../src/audit/record-history';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { StoredEvent } from '../../src/event-store/event-store.port';
import { evolveRecord } from '../../src/records/record';
import { IDEMPOTENCY_TTL_MS, liveClaim } from '../../src/idempotency/idempotent-creates';

const ID = '3f1c1b8e-2f0a-4d7e-9b8a-1c2d3e4f5a6b';
const T0 = 1_700_000_000; // epoch seconds of the first event

/** A stream as the store hands it back: one event per given [type, data, epoch ms]. */
function stream(streamId: string, events: [string, Record<string, unknown>, number][]): StoredEvent[] {
  return events.map(([type, data, ms], revision) => ({
    id: `e${revision}`,
    streamId,
    revision,
    position: { commit: BigInt(10 + revision), prepare: BigInt(10 + revision) },
    type,
    data,
    metadata: { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1, occurredAt: new Date(ms).toISOString() },
    recordedAt: new Date(ms),
  }));
}

const customer = stream(`customer-${ID}`, [
  ['CustomerCreated', { name: 'Ada', email: 'ada@x.io', tel: '021' }, T0 * 1000 + 400],
  ['CustomerUpdated', { name: 'Ada L', tel: '' }, T0 * 1000 + 900],
  ['CustomerUpdated', { company: 'Acme' }, (T0 + 5) * 1000],
  ['CustomerDeleted', {}, (T0 + 9) * 1000 + 999],
]);

describe('field changes', () => {
  it('lists each field whose value differs, "" standing for no value', () => {
    expect(fieldChanges({ name: 'A', tel: '1', email: 'e' }, { name: 'B', email: 'e', mobile: '0912' })).toEqual({
      name: { from: 'A', to: 'B' },
      tel: { from: '1', to: '' },
      mobile: { from: '', to: '0912' },
    });
  });

  it('is empty when nothing differs', () => {
    expect(fieldChanges({ name: 'A', tel: '' }, { name: 'A' })).toEqual({});
  });
});

describe('record history', () => {
  it('shows created fields from "", updates as before/after, and a delete without changes', () => {
    expect(recordHistory(CUSTOMER, customer, null, false)).toEqual([
      {
        event: 'CustomerCreated',
        revision: 0,
        occurred: new Date(T0 * 1000 + 400).toISOString(),
        actor: 'acc',
        changes: { name: { from: '', to: 'Ada' }, email: { from: '', to: 'ada@x.io' }, tel: { from: '', to: '021' } },
      },
      {
        event: 'CustomerUpdated',
        revision: 1,
        occurred: new Date(T0 * 1000 + 900).toISOString(),
        actor: 'acc',
        changes: { name: { from: 'Ada', to: 'Ada L' }, tel: { from: '021', to: '' } },
      },
      {
        event: 'CustomerUpdated',
        revision: 2,
        occurred: new Date((T0 + 5) * 1000).toISOString(),
        actor: 'acc',
        changes: { company: { from: '', to: 'Acme' } },
      },
      { event: 'CustomerDeleted', revision: 3, occurred: new Date((T0 + 9) * 1000 + 999).toISOString(), actor: 'acc', changes: {} },
    ]);
  });
});

describe('record history of a page', () => {
  it("compares a page's first event with the fold before the page", () => {
    const before = evolveRecord(CUSTOMER, evolveRecord(CUSTOMER, null, customer[0]), customer[1]);
    expect(recordHistory(CUSTOMER, customer.slice(2, 3), before, false).map((e) => [e.revision, e.changes])).toEqual([
      [2, { company: { from: '', to: 'Acme' } }],
    ]);
  });
});

describe('the revision a record stood at at the end of a second', () => {
  let reads = 0;
  const asOf = (second: number, events = customer) =>
    revisionAsOf(second, events[0], events[events.length - 1], async (revision) => {
      reads += 1;
      return events[revision];
    });

  it('is -1 before its first event', async () => {
    await expect(asOf(T0 - 1)).resolves.toBe(-1);
  });

  it('includes every event stored within the second asked for', async () => {
    await expect(asOf(T0)).resolves.toBe(1);
  });

  it('stands still between events and moves at the second of the next one', async () => {
    await expect(asOf(T0 + 4)).resolves.toBe(1);
    await expect(asOf(T0 + 5)).resolves.toBe(2);
    await expect(asOf(T0 + 8)).resolves.toBe(2);
  });

  it('is the last event from the second of the last one on', async () => {
    await expect(asOf(T0 + 9)).resolves.toBe(3);
    await expect(asOf(T0 + 1_000_000)).resolves.toBe(3);
  });

  it('reads about log2(revisions) events of a long stream, one second apart', async () => {
    const long = stream(
      `customer-${ID}`,
      Array.from({ length: 20_000 }, (_, i): [string, Record<string, unknown>, number] => ['CustomerUpdated', {}, (T0 + i) * 1000]),
    );
    for (const revision of [1, 777, 10_000, 19_998]) {
      reads = 0;
      await expect(asOf(T0 + revision, long)).resolves.toBe(revision);
      expect(reads).toBeLessThanOrEqual(15);
    }
  });
});

describe('idempotency key claims', () => {
  const claimedAt = T0 * 1000;
  const keyStream = stream('idempotency-k', [
    ['IdempotencyKeyClaimed', { fingerprint: 'f1', recordId: 'r1' }, claimedAt],
    ['IdempotencyKeyAnswered', { body: { n: 1 }, revision: 0 }, claimedAt + 50],
  ]);

  it('holds a claim and its answer for 24 hours', () => {
    const live = liveClaim(keyStream, claimedAt + IDEMPOTENCY_TTL_MS - 1)!;
    expect(live.claim.data).toEqual({ fingerprint: 'f1', recordId: 'r1' });
    expect(live.answer!.data).toEqual({ body: { n: 1 }, revision: 0 });
  });

  it('frees the key once the claim is 24 hours old', () => {
    expect(liveClaim(keyStream, claimedAt + IDEMPOTENCY_TTL_MS)).toBeUndefined();
  });

  it('goes by the newest claim: one made after an expiry has no answer yet', () => {
    const reclaimed = [
      ...keyStream,
      ...stream('idempotency-k', [['IdempotencyKeyClaimed', { fingerprint: 'f2', recordId: 'r2' }, claimedAt + IDEMPOTENCY_TTL_MS]]).map((e) => ({
        ...e,
        revision: 2,
      })),
    ];
    const live = liveClaim(reclaimed, claimedAt + IDEMPOTENCY_TTL_MS + 1)!;
    expect(live.claim.data).toEqual({ fingerprint: 'f2', recordId: 'r2' });
    expect(live.answer).toBeUndefined();
  });

  it('has no claim on a fresh key', () => {
    expect(liveClaim([], claimedAt)).toBeUndefined();
  });
});

describe('an erased record', () => {
  // As read once its key is destroyed: the field names stay, every value opens as ''. Events written
  // before encryption would still carry theirs: history and as-of go by the erasure event, not by that.
  const erased = stream(`customer-${ID}`, [
    ['CustomerCreated', { name: '', email: 'ada@x.io' }, T0 * 1000],
    ['CustomerUpdated', { tel: '' }, (T0 + 1) * 1000],
    ['CustomerErased', {}, (T0 + 2) * 1000],
  ]);

  it('keeps every entry, with null for each value an event set, and ends with the erasure', () => {
    expect(recordHistory(CUSTOMER, erased, null, true).map((e) => [e.event, e.revision, e.changes])).toEqual([
      ['CustomerCreated', 0, { name: null, email: null }],
      ['CustomerUpdated', 1, { tel: null }],
      ['CustomerErased', 2, {}],
    ]);
  });
});
