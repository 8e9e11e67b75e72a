/**
 * Tenancy under fuzz: random creates, reads, updates, deletes and filtered lists from several tokens of
 * several accounts, run concurrently. No answer to one account ever holds another account's record id
 * or any value another account wrote, and another account's record is always 404.
 */
import fc from 'fast-check';
import { Agent } from 'node:http';
import { jsonRequest, rawRequest } from '../support/raw-http';
import { RUN_SUFFIX } from '../support/stores';
import { startTestApp, TestApp } from '../support/test-app';

const ACCOUNT_COUNT = 4;
/** Account 0 has two tokens, the others one each. */
const TOKENS = ['tok-0a', 'tok-0b', 'tok-1', 'tok-2', 'tok-3'];
const accountOf = (token: string) => Number(token[4]);
/** Every value account k writes carries its mark, so a leak of any value shows in the answer's text. */
const mark = (k: number) => `zz${k}tenant`;
const RUNS = 40;
const PER_RUN = 30;

type Resource = 'customers' | 'profiles';
const FILTERS: Record<Resource, string[]> = { customers: ['email', 'company'], profiles: ['email', 'site', 'slug'] };

const opArb = fc.record({
  resource: fc.constantFrom<Resource>('customers', 'profiles'),
  op: fc.constantFrom('create', 'create', 'read', 'history', 'as_of', 'update', 'delete', 'list'),
  token: fc.constantFrom(...TOKENS),
  /** Which record, by index into all made so far: any account's. */
  target: fc.nat(),
  filter: fc.option(fc.nat(), { nil: undefined }),
  serial: fc.nat(),
  limit: fc.integer({ min: 1, max: 100 }),
});
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

/** Slugs are unique service-wide: each create takes a new one. */
let slugs = 0;

/** Values for every field a list can filter on and a response shows, all carrying the account's mark. */
function bodyFor(resource: Resource, k: number, serial: number): Record<string, string> {
  const m = `${mark(k)}-${serial}`;
  return resource === 'customers'
    ? { name: `name ${m}`, email: `${m}@example.com`, company: `company ${m}`, address: `address ${m}` }
    : { name: `name ${m}`, email: `${m}@example.com`, site: `https://${m}.example.com`, slug: `${m}-${++slugs}${RUN_SUFFIX}` };
}

interface Made {
  id: string;
  resource: Resource;
  account: number;
  values: Record<string, string>;
}

describe('tenancy under fuzz', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ accounts: new Map(TOKENS.map((token) => [token, `account-${accountOf(token)}${RUN_SUFFIX}`])) });
  });
  afterAll(() => t.close());

  it(`answers ${RUNS * PER_RUN} concurrent requests of ${ACCOUNT_COUNT} accounts with nothing of another account`, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const made: Made[] = [];
    let ownRecordsSeen = 0;
    let foreignTargets = 0;

    const run = async (op: Op) => {
      const k = accountOf(op.token);
      const target = made.length ? made[op.target % made.length] : undefined;
      const item = target && `/v1/${target.resource}/${target.id}`;
      let req;
      if (op.op === 'create' || !target) {
        req = jsonRequest('POST', `/v1/${op.resource}`, op.token, bodyFor(op.resource, k, op.serial));
      } else if (op.op === 'read') {
        req = jsonRequest('GET', item!, op.token);
      } else if (op.op === 'history') {
        req = jsonRequest('GET', `${item}/history`, op.token);
      } else if (op.op === 'as_of') {
        req = jsonRequest('GET', `${item}?as_of=${Math.floor(Date.now() / 1000) + 1}`, op.token);
      } else if (op.op === 'update') {
        req = jsonRequest('PUT', item!, op.token, { name: `renamed ${mark(k)}-${op.serial}` });
      } else if (op.op === 'delete') {
        req = jsonRequest('DELETE', item!, op.token);
      } else {
        // Filter on a value of any account's record: another account's value must find nothing.
        const field = FILTERS[target.resource][(op.filter ?? 0) % FILTERS[target.resource].length];
        const query = op.filter === undefined ? '' : `&${field}=${encodeURIComponent(target.values[field])}`;
        req = jsonRequest('GET', `/v1/${target.resource}?limit=${op.limit}${query}`, op.token);
      }
      const res = await rawRequest(t.baseUrl, req, agent);
      const where = `${req.method} ${req.path} as account ${k}: ${res.status} ${res.text.slice(0, 300)}`;

      for (let j = 0; j < ACCOUNT_COUNT; j++) {
        if (j !== k && res.text.includes(mark(j))) throw new Error(`a value of account ${j} in ${where}`);
      }
      for (const other of made) {
        if (other.account !== k && res.text.includes(other.id)) throw new Error(`account ${other.account}'s record ${other.id} in ${where}`);
      }
      if (req.method !== 'POST' && op.op !== 'list' && target!.account !== k) {
        foreignTargets++;
        if (res.status !== 404) throw new Error(`another account's record answered ${res.status}, not 404: ${where}`);
      }
      if (res.status >= 500) throw new Error(`a 5xx: ${where}`);
      if (req.method === 'POST' && res.status === 201) {
        const body = JSON.parse(req.body as string);
        made.push({
          id: (Object.values(JSON.parse(res.text).data)[0] as { id: string }).id,
          resource: req.path.split('/')[2] as Resource,
          account: k,
          values: body,
        });
      }
      if (res.status === 200) ownRecordsSeen += made.filter((m) => m.account === k && res.text.includes(m.id)).length;
    };

    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: PER_RUN, maxLength: PER_RUN }), async (ops) => {
          await Promise.all(ops.map(run));
        }),
        { numRuns: RUNS },
      );
    } finally {
      agent.destroy();
    }
    // The checks above had something to find: records of every account, reached by the others.
    expect(new Set(made.map((m) => m.account)).size).toBe(ACCOUNT_COUNT);
    expect(foreignTargets).toBeGreaterThan(100);
    expect(ownRecordsSeen).toBeGreaterThan(100);
  }, 300_000);
});
