import { ApiError } from '../../src/errors';
import { StoredEvent } from '../../src/event-store/event-store.port';
import { CUSTOMER, decideCreateCustomer, decideDeleteCustomer, decideUpdateCustomer } from '../../src/customers/customer.decider';
import { evolveRecord, RecordState } from '../../src/records/record';

const ID = '3f1c1b8e-2f0a-4d7e-9b8a-1c2d3e4f5a6b';

/** Folds decided events the way the store would hand them back. */
function fold(state: RecordState | null, events: { type: string; data: Record<string, unknown> }[], accountId = 'acc') {
  return events.reduce<RecordState | null>((s, e, i) => {
    const revision = (s?.revision ?? -1) + 1;
    const stored: StoredEvent = {
      ...e,
      id: `e${i}`,
      streamId: `customer-${ID}`,
      revision,
      position: { commit: BigInt(100 + revision), prepare: BigInt(100 + revision) },
      metadata: { accountId, correlationId: 'c', causationId: 'c', schemaVersion: 1 },
      recordedAt: new Date(1_700_000_000_500),
    };
    return evolveRecord(CUSTOMER, s, stored);
  }, state);
}

const created = () => fold(null, decideCreateCustomer(null, { name: 'Ada', email: 'ada@x.io', mobile: '' }));

function faultFields(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return ((error as ApiError).details ?? []).map((d) => d.field);
  }
  throw new Error('expected a refusal');
}

describe('customer decisions', () => {
  it('appends nothing when the id exists already (an idempotent retry re-running its create)', () => {
    expect(decideCreateCustomer(created(), { name: 'Ada', email: 'ada@x.io' })).toEqual([]);
  });

  it('creates with the fields that have a value', () => {
    expect(decideCreateCustomer(null, { name: 'Ada', email: 'ada@x.io', tel: '' })).toEqual([
      { type: 'CustomerCreated', data: { name: 'Ada', email: 'ada@x.io' } },
    ]);
  });

  it('folds a creation into a record owned by the creating account', () => {
    expect(created()).toEqual({
      id: ID,
      accountId: 'acc',
      revision: 0,
      seq: 100,
      deleted: false,
      created: 1_700_000_000,
      fields: { name: 'Ada', email: 'ada@x.io' },
    });
  });

  it('refuses a customer with neither email nor mobile, naming both', () => {
    expect(faultFields(() => decideCreateCustomer(null, { name: 'Ada' }))).toEqual(['email', 'mobile']);
  });

  it('appends only the fields that change', () => {
    expect(decideUpdateCustomer(created(), 'acc', { name: 'Ada', company: 'Acme' })).toEqual([
      { type: 'CustomerUpdated', data: { company: 'Acme' } },
    ]);
  });

  it('appends nothing when nothing changes', () => {
    expect(decideUpdateCustomer(created(), 'acc', { name: 'Ada', tel: '' })).toEqual([]);
  });

  it('refuses an update that would leave neither email nor mobile', () => {
    expect(faultFields(() => decideUpdateCustomer(created(), 'acc', { email: '' }))).toEqual(['email', 'mobile']);
  });

  it('allows clearing email when mobile takes over', () => {
    const [event] = decideUpdateCustomer(created(), 'acc', { email: '', mobile: '09123456789' });
    expect(event.data).toEqual({ email: '', mobile: '09123456789' });
    expect(fold(created(), [event])?.fields).toEqual({ name: 'Ada', email: '', mobile: '09123456789' });
  });

  it.each([
    ['another account', (s: RecordState | null) => decideUpdateCustomer(s, 'other', { name: 'X' })],
    ['a deleted customer', (s: RecordState | null) => decideUpdateCustomer(fold(s, decideDeleteCustomer(s, 'acc')), 'acc', { name: 'X' })],
    ['a missing customer', () => decideUpdateCustomer(null, 'acc', { name: 'X' })],
    ['deleting twice', (s: RecordState | null) => decideDeleteCustomer(fold(s, decideDeleteCustomer(s, 'acc')), 'acc')],
  ])('answers NOT_FOUND for %s', (_, act) => {
    expect(() => act(created())).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
  });
});
