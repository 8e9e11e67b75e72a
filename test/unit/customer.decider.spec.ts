import { CustomerCommand, customerDecider, CustomerEvent } from '../../src/customers/customer.decider';
import { deciderSpec } from '../support/decider-spec';

const ID = '3f1c1b8e-2f0a-4d7e-9b8a-1c2d3e4f5a6b';
const spec = deciderSpec(customerDecider, { streamId: `customer-${ID}`, accountId: 'acc' });

const created: CustomerEvent = { type: 'CustomerCreated', data: { name: 'Ada', email: 'ada@x.io' } };
const deleted: CustomerEvent = { type: 'CustomerDeleted', data: {} };
const erased: CustomerEvent = { type: 'CustomerErased', data: {} };

const create = (fields: Record<string, string>): CustomerCommand => ({ type: 'CreateCustomer', data: { fields } });
const update = (fields: Record<string, string>, accountId = 'acc'): CustomerCommand => ({ type: 'UpdateCustomer', data: { accountId, fields } });
const remove = (accountId = 'acc'): CustomerCommand => ({ type: 'DeleteCustomer', data: { accountId } });

/** A refusal naming these fields. */
const invalid = (...fields: string[]) => ({ reason: 'invalid', details: fields.map((field) => expect.objectContaining({ field })) });

describe('customer decisions', () => {
  it('appends nothing when the id exists already (an idempotent retry re-running its create)', () => {
    spec
      .given([created])
      .when(create({ name: 'Ada', email: 'ada@x.io' }))
      .thenNothingHappened();
  });

  it('creates with the fields that have a value', () => {
    spec
      .given([])
      .when(create({ name: 'Ada', email: 'ada@x.io', tel: '' }))
      .then([{ type: 'CustomerCreated', data: { name: 'Ada', email: 'ada@x.io' } }]);
  });

  it('folds a creation into a record owned by the creating account', () => {
    expect(spec.fold([created])).toEqual({
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
    spec
      .given([])
      .when(create({ name: 'Ada' }))
      .thenThrows(invalid('email', 'mobile'));
  });

  it('appends only the fields that change', () => {
    spec
      .given([created])
      .when(update({ name: 'Ada', company: 'Acme' }))
      .then([{ type: 'CustomerUpdated', data: { company: 'Acme' } }]);
  });

  it('appends nothing when nothing changes', () => {
    spec
      .given([created])
      .when(update({ name: 'Ada', tel: '' }))
      .thenNothingHappened();
  });

  it('refuses an update that would leave neither email nor mobile', () => {
    spec
      .given([created])
      .when(update({ email: '' }))
      .thenThrows(invalid('email', 'mobile'));
  });

  it('allows clearing email when mobile takes over', () => {
    const updated: CustomerEvent = { type: 'CustomerUpdated', data: { email: '', mobile: '09123456789' } };
    spec
      .given([created])
      .when(update({ email: '', mobile: '09123456789' }))
      .then([updated]);
    expect(spec.fold([created, updated])?.fields).toEqual({ name: 'Ada', email: '', mobile: '09123456789' });
  });

  it('deletes a customer of the account', () => {
    spec.given([created]).when(remove()).then([deleted]);
  });

  it.each<[string, CustomerEvent[], CustomerCommand]>([
    ['another account', [created], update({ name: 'X' }, 'other')],
    ['a deleted customer', [created, deleted], update({ name: 'X' })],
    ['an erased customer', [created, erased], update({ name: 'X' })],
    ['a missing customer', [], update({ name: 'X' })],
    ['deleting twice', [created, deleted], remove()],
    ["deleting another account's customer", [created], remove('other')],
  ])('answers NOT_FOUND for %s', (_, given, command) => {
    spec.given(given).when(command).thenThrows({ reason: 'not_found' });
  });
});
