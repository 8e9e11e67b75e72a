import type { RecordKindDefinition } from './kinds/record-kind-definition';
import { CUSTOMERS } from './customers/customer.kind';
import { PROFILES } from './profiles/profile.kind';

/**
 * Every kind of record the service keeps, one line each: the app, the CLI and the read models
 * derive everything else from this list (read-models.ts, app.module.ts, app.ts). Its order is the
 * order of the read models (health, the CLI), of the routes and of the OpenAPI document's tags.
 */
export const REGISTERED_KINDS: readonly RecordKindDefinition[] = [PROFILES, CUSTOMERS];
