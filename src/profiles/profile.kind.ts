import type { RecordKindDefinition } from '../kinds/record-kind-definition';
import { PROFILE_API } from './profile.api';
import { PROFILE } from './profile.decider';
import { profileProjection } from './profile.projection';
import { ProfilesModule } from './profiles.module';

/** Business profiles, as the service registers them (src/record-kinds.ts). */
export const PROFILES: RecordKindDefinition = { kind: PROFILE, readModel: profileProjection, api: PROFILE_API, module: ProfilesModule };
