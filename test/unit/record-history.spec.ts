import { fieldChanges, recordAsOf, recordHistory } from '../../src/audit/record-history';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { StoredEvent } from '../../src/event-store/event-store.port';
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
    metadata: { accountId: 'acc', correlationId: 'c', causationId: 'c', schemaVersion: 1 },
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
    expect(recordHistory(CUSTOMER, customer)).toEqual([
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

describe('record as of a second', () => {
  it('does not exist before its first event', () => {
    expect(recordAsOf(CUSTOMER, customer, T0 - 1)).toBeNull();
  });

  it('includes every event stored within the second asked for', () => {
    const state = recordAsOf(CUSTOMER, customer, T0)!;
    expect({ revision: state.revision, fields: state.fields, deleted: state.deleted }).toEqual({
      revision: 1,
      fields: { name: 'Ada L', email: 'ada@x.io', tel: '' },
      deleted: false,
    });
  });

  it('stands still between events and moves at the second of the next one', () => {
    expect(recordAsOf(CUSTOMER, customer, T0 + 4)!.revision).toBe(1);
    expect(recordAsOf(CUSTOMER, customer, T0 + 5)!.fields.company).toBe('Acme');
    expect(recordAsOf(CUSTOMER, customer, T0 + 8)!.deleted).toBe(false);
  });

  it('is a tombstone from the second it was deleted', () => {
    expect(recordAsOf(CUSTOMER, customer, T0 + 9)!.deleted).toBe(true);
    expect(recordAsOf(CUSTOMER, customer, T0 + 1_000_000)!.deleted).toBe(true);
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
      ...stream('idempotency-k', [['IdempotencyKeyClaimed', { fingerprint: 'f2', recordId: 'r2' }, claimedAt + IDEMPOTENCY_TTL_MS]]).map(
        (e) => ({ ...e, revision: 2 }),
      ),
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
    expect(recordHistory(CUSTOMER, erased).map((e) => [e.event, e.revision, e.changes])).toEqual([
      ['CustomerCreated', 0, { name: null, email: null }],
      ['CustomerUpdated', 1, { tel: null }],
      ['CustomerErased', 2, {}],
    ]);
  });

  it('did not exist at any time', () => {
    for (const asOf of [T0, T0 + 1, T0 + 100]) expect(recordAsOf(CUSTOMER, erased, asOf)).toBeNull();
  });
});
