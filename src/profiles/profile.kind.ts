import type { RecordKindDefinition } from '../kinds/record-kind-definition';
import { PROFILE } from './profile.decider';
import { profileProjection } from './profile.projection';

/** Business profiles, as the service registers them (src/record-kinds.ts). */
export const PROFILES: RecordKindDefinition = {
  kind: PROFILE,
  readModel: profileProjection,
  // Loaded when the app starts: the CLI needs the kind and its read model alone.
  routes: async () => ({ module: (await import('./profiles.module')).ProfilesModule, api: (await import('./profile.api')).PROFILE_API }),
};
