import type { RecordKindDefinition } from '../../../src/kinds/record-kind-definition';
import { SUPPLIER, SUPPLIER_API, supplierProjection } from './supplier';
import { SuppliersModule } from './supplier.module';

/** Suppliers, as a test app registers them beside the service's kinds (startTestApp's `extraKinds`). */
export const SUPPLIERS: RecordKindDefinition = {
  kind: SUPPLIER,
  readModel: supplierProjection,
  routes: async () => ({ module: SuppliersModule, api: SUPPLIER_API }),
};
