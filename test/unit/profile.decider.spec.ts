import { ProfileCommand, profileDecider, ProfileEvent, slugChange } from '../../src/profiles/profile.decider';
import { deciderSpec } from '../support/decider-spec';

const ID = '7a0e4c2d-1b3f-4e5a-8c6d-9e0f1a2b3c4d';
const spec = deciderSpec(profileDecider, { streamId: `profile-${ID}`, accountId: 'acc' });

const created: ProfileEvent = { type: 'ProfileCreated', data: { name: 'Shop', slug: 'shop' } };
const deleted: ProfileEvent = { type: 'ProfileDeleted', data: {} };
const erased: ProfileEvent = { type: 'ProfileErased', data: {} };

const create = (fields: Record<string, string>): ProfileCommand => ({ type: 'CreateProfile', data: { fields } });
const update = (fields: Record<string, string>, accountId = 'acc'): ProfileCommand => ({ type: 'UpdateProfile', data: { accountId, fields } });
const remove = (accountId = 'acc'): ProfileCommand => ({ type: 'DeleteProfile', data: { accountId } });

describe('profile decisions', () => {
  it('creates with the fields that have a value', () => {
    spec
      .given([])
      .when(create({ name: 'Shop', slug: 'shop', description: '' }))
      .then([{ type: 'ProfileCreated', data: { name: 'Shop', slug: 'shop' } }]);
  });

  it('appends nothing when the id exists already (an idempotent retry re-running its create)', () => {
    spec
      .given([created])
      .when(create({ name: 'Other', slug: 'other' }))
      .thenNothingHappened();
  });

  it('folds a creation into a record owned by the creating account', () => {
    expect(spec.fold([created])).toEqual({
      id: ID,
      accountId: 'acc',
      revision: 0,
      seq: 100,
      deleted: false,
      created: 1_700_000_000,
      fields: { name: 'Shop', slug: 'shop' },
    });
  });

  it('appends only the fields that change', () => {
    spec
      .given([created])
      .when(update({ name: 'Shop', site: 'https://shop.example' }))
      .then([{ type: 'ProfileUpdated', data: { site: 'https://shop.example' } }]);
  });

  it('appends nothing when nothing changes', () => {
    spec
      .given([created])
      .when(update({ name: 'Shop', slug: 'shop', tel: '' }))
      .thenNothingHappened();
  });

  it('clears a field sent empty, and the fold shows it cleared', () => {
    const cleared: ProfileEvent = { type: 'ProfileUpdated', data: { slug: '' } };
    spec
      .given([created])
      .when(update({ slug: '' }))
      .then([cleared]);
    expect(spec.fold([created, cleared])?.fields).toEqual({ name: 'Shop', slug: '' });
  });

  it('deletes a profile of the account', () => {
    spec.given([created]).when(remove()).then([deleted]);
  });

  it('folds an erasure into a deleted record with no field value', () => {
    expect(spec.fold([created, erased])).toMatchObject({ deleted: true, erased: true, fields: {} });
  });

  it.each<[string, ProfileEvent[], ProfileCommand]>([
    ['another account', [created], update({ name: 'X' }, 'other')],
    ['a deleted profile', [created, deleted], update({ name: 'X' })],
    ['an erased profile', [created, erased], update({ name: 'X' })],
    ['a missing profile', [], update({ name: 'X' })],
    ['deleting twice', [created, deleted], remove()],
    ["deleting another account's profile", [created], remove('other')],
  ])('answers NOT_FOUND for %s', (_, given, command) => {
    spec.given(given).when(command).thenThrows({ reason: 'not_found' });
  });
});

/** What the handler reserves before the append and releases after it (profile.commands.ts). */
describe('the slug a decision takes and gives up', () => {
  const slugOf = (given: ProfileEvent[], command: ProfileCommand) => {
    const state = spec.fold(given);
    return slugChange(state, profileDecider.decide(command, state));
  };

  it.each<[string, ProfileEvent[], ProfileCommand, ReturnType<typeof slugChange>]>([
    ['a create takes its slug', [], create({ name: 'Shop', slug: 'shop' }), { taken: 'shop' }],
    ['a create with no slug takes none', [], create({ name: 'Shop', slug: '' }), {}],
    ['a create of an existing id takes none', [created], create({ name: 'Shop', slug: 'other' }), {}],
    ['a new slug is taken, the old given up', [created], update({ slug: 'other' }), { taken: 'other', givenUp: 'shop' }],
    ['a change of case alone is neither', [created], update({ slug: 'SHOP' }), {}],
    ['the same slug is neither', [created], update({ slug: 'shop', name: 'New' }), {}],
    ['an update without a slug is neither', [created], update({ name: 'New' }), {}],
    ['a slug cleared is given up', [created], update({ slug: '' }), { givenUp: 'shop' }],
    ['a deletion gives the slug up', [created], remove(), { givenUp: 'shop' }],
  ])('%s', (_, given, command, expected) => {
    expect(slugOf(given, command)).toEqual(expected);
  });
});
