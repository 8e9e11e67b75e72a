import { recordProjection } from '../records/record.projection';
import { PROFILE } from './profile.decider';

/** Where a profile's read model row is written: the `profiles` collection, filtered as lists need. */
export const profileProjection = recordProjection(PROFILE, {
  name: 'profiles',
  filters: { email: 'exact-ci', tel: 'exact', site: 'contains-ci', slug: 'exact-ci' },
});

export const PROFILE_FILTERS = Object.keys(profileProjection.schema.filters);
