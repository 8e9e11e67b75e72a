import { createExample, record } from '../docs/examples';
import type { ApiRecordSpec } from '../docs/openapi';
import { ProfileBody } from './profile.body';
import { profileProjection } from './profile.projection';
import { PROFILE_FIELDS, profileView } from './profile.view';

const ID = '3b8e6f5c-2d41-4c8a-9f0e-7a1b2c3d4e5f';
const CREATE = createExample(ProfileBody);
const UPDATE = { tel: '02188776600', site: 'https://shop.saffrontea.example', network_b: null };
const FULL = profileView(record(ID, CREATE), true);

/** /v1/profiles in the OpenAPI document (docs/openapi.ts): every answer shows the whole profile. */
export const PROFILE_API: ApiRecordSpec = {
  resource: 'Profile',
  tag: 'Business profiles: the seller identity printed on invoices',
  bodies: { create: ProfileBody, update: ProfileBody },
  filters: profileProjection.schema.filters,
  answers: {
    full: {
      name: 'Profile',
      description: 'A business profile, as every response shows it.',
      fields: PROFILE_FIELDS,
      extra: {
        logo: { type: 'string', enum: [''], description: 'no operation sets it' },
        signature: { type: 'string', enum: [''], description: 'no operation sets it' },
        default: { type: 'integer', enum: [0, 1], description: "1 for the account's oldest live profile" },
      },
    },
  },
  examples: {
    id: ID,
    create: CREATE,
    update: UPDATE,
    full: FULL,
    short: FULL,
    updated: profileView(record(ID, CREATE, UPDATE), true),
    filters: { email: 'ada@example.com', tel: '02188776655', site: 'saffrontea', slug: 'SaffronTea' },
    history: [
      {
        event: 'ProfileCreated',
        revision: 0,
        occurred: '2026-11-22T03:11:25.920Z',
        actor: 'acme',
        changes: { name: { from: '', to: 'Saffron Tea House' }, tel: { from: '', to: '02188776655' } },
      },
      {
        event: 'ProfileUpdated',
        revision: 1,
        occurred: '2026-11-22T03:11:32.200Z',
        actor: 'acme',
        changes: { tel: { from: '02188776655', to: '02188776600' } },
      },
    ],
  },
  rules: {
    create: 'Every field is optional. The slug is unique across the service, ignoring case (409 when taken).',
    erase: 'and its slug is free',
  },
};
