import { customerProjection } from './customers/customer.projection';
import { feedProjection } from './feed/feed.projection';
import { profileProjection } from './profiles/profile.projection';
import type { Projection } from './projections/projection';
import type { RecordKind } from './records/record';
import { CUSTOMER } from './customers/customer.decider';
import { PROFILE } from './profiles/profile.decider';

/** Every kind of record: their events' values are sealed with a data key per record. */
export const RECORD_KINDS: RecordKind[] = [PROFILE, CUSTOMER];

/** Every read model the service keeps: the service runs a projector for each, the CLI rebuilds them. */
export const READ_MODELS: Projection[] = [profileProjection, customerProjection, feedProjection(RECORD_KINDS)];
