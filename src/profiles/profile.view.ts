import type { RecordState } from '../records/record';

export const PROFILE_FIELDS = ['name', 'description', 'tel', 'email', 'address', 'site', 'slug', 'messenger', 'network_a', 'network_b', 'network_c'];

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
