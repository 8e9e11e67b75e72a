import { CUSTOMERS } from '../../src/customers/customer.kind';
import { CUSTOMER } from '../../src/customers/customer.decider';
import { checkedKinds, routesOf } from '../../src/kinds/record-kind-definition';
import { READ_MODELS, readModelsOf, RECORD_KINDS } from '../../src/read-models';
import { REGISTERED_KINDS } from '../../src/record-kinds';
import { recordProjection } from '../../src/records/record.projection';
import { SUPPLIERS } from '../support/third-kind/supplier.kind';

/** The registered kinds, what the service derives from them, and the checks that keep kinds apart. */
describe('record kinds', () => {
  it('derives the sealed kinds and the read models from the registered list: one model per kind, then the feed of them all', () => {
    expect(RECORD_KINDS.map((kind) => kind.streamPrefix)).toEqual(['profile', 'customer']);
    expect(READ_MODELS.map((model) => [model.name, model.streamPrefixes])).toEqual([
      ['profiles', ['profile-']],
      ['customers', ['customer-']],
      ['feed', ['profile-', 'customer-']],
    ]);
    expect(readModelsOf([...REGISTERED_KINDS, SUPPLIERS]).map((model) => [model.name, model.streamPrefixes])).toEqual([
      ['profiles', ['profile-']],
      ['customers', ['customer-']],
      ['suppliers', ['supplier-']],
      ['feed', ['profile-', 'customer-', 'supplier-']],
    ]);
  });

  it('refuses two kinds that share a stream prefix, a label or a read model name', () => {
    const clients = { ...CUSTOMERS, readModel: recordProjection(CUSTOMER, { name: 'clients', filters: {} }) };
    expect(() => checkedKinds([CUSTOMERS, clients])).toThrow('Record kinds Customer and Customer have the same stream prefix "customer"');

    const CLIENT = { ...CUSTOMER, streamPrefix: 'client' };
    const sameLabel = { ...CUSTOMERS, kind: CLIENT, readModel: recordProjection(CLIENT, { name: 'clients', filters: {} }) };
    expect(() => checkedKinds([CUSTOMERS, sameLabel])).toThrow('have the same label "customer"');

    const SUPPLIER_AS_CUSTOMERS = { ...SUPPLIERS, readModel: recordProjection(SUPPLIERS.kind, { name: 'customers', filters: {} }) };
    expect(() => checkedKinds([CUSTOMERS, SUPPLIER_AS_CUSTOMERS])).toThrow('Record kinds Customer and Supplier have the same read model "customers"');

    // Nor one whose prefix is a stream of the service's own.
    const SERVICE = { ...CUSTOMER, label: 'Service', streamPrefix: 'service' };
    const services = { ...CUSTOMERS, kind: SERVICE, readModel: recordProjection(SERVICE, { name: 'services', filters: {} }) };
    expect(() => checkedKinds([services])).toThrow('Record kind Service: the stream prefix "service" is the service\'s own');
  });

  it('refuses a definition whose parts name different kinds', async () => {
    const customerRoutes = await CUSTOMERS.routes();
    await expect(routesOf([{ ...SUPPLIERS, routes: async () => customerRoutes }])).rejects.toThrow('Record kind Supplier: its OpenAPI resource is Customer');
    expect(() => checkedKinds([{ ...SUPPLIERS, readModel: CUSTOMERS.readModel }])).toThrow('Record kind Supplier: its read model follows other streams');
  });
});
