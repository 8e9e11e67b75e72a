import { fieldNames } from '../http/field-rules';
import type { RecordState } from '../records/record';
import { ProfileBody } from './profile.body';

/** Every field of the body, in its order. */
export const PROFILE_FIELDS = fieldNames(ProfileBody);

/**
 * A profile as every response shows it. logo and signature are '' (no operation sets them);
 * default is 1 for the account's oldest live profile.
 */
export function profileView(profile: RecordState, isDefault: boolean) {
  const view: Record<string, string | number> = { id: profile.id };
  for (const field of PROFILE_FIELDS) view[field] = profile.fields[field] ?? '';
  view.logo = '';
  view.signature = '';
  view.default = isDefault ? 1 : 0;
  view.created = profile.created;
  return view;
}
