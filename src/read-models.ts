import { feedProjection } from './feed/feed.projection';
import { checkedKinds, type RecordKindDefinition } from './kinds/record-kind-definition';
import type { Projection } from './projections/projection';
import type { RecordKind } from './records/record';
import { REGISTERED_KINDS } from './record-kinds';

/** The read models of `definitions`: one per kind, then the change feed's index of them all. */
export const readModelsOf = (definitions: readonly RecordKindDefinition[]): Projection[] => [
  ...definitions.map((definition) => definition.readModel),
  feedProjection(checkedKinds(definitions)),
];

/** Every kind of record: their events' values are sealed with a data key per record. */
export const RECORD_KINDS: RecordKind[] = checkedKinds(REGISTERED_KINDS);

/** Every read model the service keeps: the service runs a projector for each, the CLI rebuilds them. */
export const READ_MODELS: Projection[] = readModelsOf(REGISTERED_KINDS);
