import type { Type } from '@nestjs/common';
import type { ApiRecordSpec } from '../docs/openapi';
import type { Projection } from '../projections/projection';
import type { RecordKind } from '../records/record';

/**
 * One kind of record, as its feature folder exports it (`PROFILES` in profiles/profile.kind.ts,
 * `CUSTOMERS` in customers/customer.kind.ts). The service is given a list of these
 * (src/record-kinds.ts) and derives from it everything that spans the kinds: the modules it
 * imports, the read models and their rebuilds, the sealed streams, the change feed, the OpenAPI
 * document. Adding a kind is its folder and a line in that list (docs/architecture.md).
 */
/** Prefixes of the service's own streams (the note of event versions written, slug claims, snapshots, idempotency keys). */
const RESERVED_PREFIXES = ['service', 'profile_slug', 'snapshot', 'idempotency'];

export interface RecordKindDefinition {
  /** Its streams and event types: what sealing, the feed, history and erasure go by. */
  kind: RecordKind;
  /** Its read model, one document per record (recordProjection): projected, rebuilt, listed. */
  readModel: Projection;
  /**
   * Its routes, loaded by the app as it starts (routesOf): the CLI and the benches need the kind and
   * its read model alone, and load neither the controllers nor the OpenAPI and validation libraries.
   */
  routes: () => Promise<RecordKindRoutes>;
}

/** What a kind adds to the app: its module and what the OpenAPI document says of it. */
export interface RecordKindRoutes {
  /** Its controller and its command and query handlers: the module the app imports. */
  module: Type<unknown>;
  /** Its /v1 resource in the OpenAPI document: names, bodies (the field rules), answers, filters. */
  api: ApiRecordSpec;
}

/** The routes of `definitions`, in their order, each checked to be its kind's. */
export async function routesOf(definitions: readonly RecordKindDefinition[]): Promise<RecordKindRoutes[]> {
  return Promise.all(
    definitions.map(async ({ kind, routes }) => {
      const loaded = await routes();
      if (loaded.api.resource !== kind.label) throw new Error(`Record kind ${kind.label}: its OpenAPI resource is ${loaded.api.resource}`);
      return loaded;
    }),
  );
}

/**
 * The kinds of `definitions`, once checked to be told apart wherever they meet: by their stream
 * prefix (sealing, the feed), their label (the answers' wrapper, idempotency keys), their read model's
 * name (a collection, a rebuild's argument). A definition's read model must follow its kind's streams.
 */
export function checkedKinds(definitions: readonly RecordKindDefinition[]): RecordKind[] {
  const seen = new Map<string, string>();
  const once = (what: string, value: string, label: string) => {
    const other = seen.get(`${what} ${value}`);
    if (other) throw new Error(`Record kinds ${other} and ${label} have the same ${what} "${value}"`);
    seen.set(`${what} ${value}`, label);
  };
  for (const { kind, readModel } of definitions) {
    if (readModel.streamPrefixes.join() !== `${kind.streamPrefix}-`) throw new Error(`Record kind ${kind.label}: its read model follows other streams`);
    once('stream prefix', kind.streamPrefix, kind.label);
    // The service's own streams: a kind's prefix must not take them for its records'.
    if (RESERVED_PREFIXES.some((prefix) => `${prefix}-`.startsWith(`${kind.streamPrefix}-`))) {
      throw new Error(`Record kind ${kind.label}: the stream prefix "${kind.streamPrefix}" is the service's own`);
    }
    once('label', kind.label.toLowerCase(), kind.label);
    once('read model', readModel.name, kind.label);
  }
  return definitions.map((definition) => definition.kind);
}
