import { customerProjection } from './customers/customer.projection';
import { profileProjection } from './profiles/profile.projection';
import type { Projection } from './projections/projection';

/** Every read model the service keeps: the service runs a projector for each, the CLI rebuilds them. */
export const READ_MODELS: Projection[] = [profileProjection, customerProjection];
