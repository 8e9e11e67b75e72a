import { Agent, get as httpGet } from 'node:http';
import type { Response } from 'supertest';
import { CUSTOMERS, expectStatus, PROFILES, Rec, resourceClient, ResourceSpec, totalOf } from '../support/http-assertions';
import { describeUnlessWorkers } from '../support/stores';
import { freshApp, Query, TOKENS, withQuery, withToken } from '../support/test-app';

type Token = (typeof TOKENS)[keyof typeof TOKENS];

interface Resource extends ResourceSpec {
  /** A valid create body; `shared` holds the values both accounts use for the list filters. */
  create: (name: string) => Rec;
  /** A valid update body that would change the record. */
  update: Rec;
  /** List filters whose value both accounts' records share: [query parameter, value]. */
  sharedFilters: [string, string][];
}

const RESOURCES: Resource[] = [
  {
    ...PROFILES,
    create: (name) => ({ name, email: 'Shared.Profile@example.com', tel: '02155550100', site: 'https://shared.example.com/shop' }),
    update: { name: 'Hijacked', description: 'changed by a stranger' },
    sharedFilters: [
      ['email', 'shared.profile@example.com'],
      ['tel', '02155550100'],
      ['site', 'SHARED.example'],
    ],
  },
  {
    ...CUSTOMERS,
    create: (name) => ({ name, email: 'Shared.Customer@example.com', mobile: '09121234567', company: 'Shared Trading Co' }),
    update: { name: 'Hijacked', company: 'Stranger Ltd' },
    sharedFilters: [
      ['email', 'shared.customer@example.com'],
      ['mobile', '09121234567'],
      ['company', 'trading'],
    ],
  },
];

describe('tenancy isolation', () => {
  const app = freshApp();
  /** The resource's operations as the token sees them. */
  const as = (r: Resource, token: Token) => resourceClient(app, r, token);

  const record = (r: Resource, res: Response) => (Array.isArray(res.body.data) ? res.body.data[0] : res.body.data)[r.key];

  const create = (r: Resource, token: Token, name: string, body = r.create(name)): Promise<Rec> => as(r, token).create(body);

  const read = (r: Resource, id: unknown, token: Token) => as(r, token).get(id as string);

  /** The token's account's list; by default all of it (every account holds fewer than 100 here). */
  async function list(r: Resource, token: Token, query: Query = { limit: 100 }) {
    const res = await expectStatus(as(r, token).list(query), 200);
    return { res, ids: as(r, token).idsOf(res), total: totalOf(res) };
  }

  function expectNotFound(res: Response) {
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, status: 404, error: { code: 'NOT_FOUND' } });
  }

  describe('profile default is per account', () => {
    const profiles = RESOURCES[0];

    it("each account's first profile is its default, whatever the other account holds", async () => {
      for (const token of [TOKENS.a, TOKENS.b]) expect((await list(profiles, token)).total).toBe(0);

      const named = (token: Token, name: string) => create(profiles, token, name, { name });
      const aFirst = await named(TOKENS.a, 'A first');
      const bFirst = await named(TOKENS.b, 'B first');
      const aSecond = await named(TOKENS.a, 'A second');
      const bSecond = await named(TOKENS.b, 'B second');
      expect([aFirst.default, bFirst.default, aSecond.default, bSecond.default]).toEqual([1, 1, 0, 0]);

      const defaults = async (token: Token) => {
        const { res } = await list(profiles, token);
        return Object.fromEntries(res.body.data.map((w: { Profile: { name: string; default: number } }) => [w.Profile.name, w.Profile.default]));
      };
      expect(await defaults(TOKENS.a)).toEqual({ 'A first': 1, 'A second': 0 });
      expect(await defaults(TOKENS.a2)).toEqual({ 'A first': 1, 'A second': 0 });
      expect(await defaults(TOKENS.b)).toEqual({ 'B first': 1, 'B second': 0 });
      expect(record(profiles, await read(profiles, bFirst.id, TOKENS.b).expect(200)).default).toBe(1);
      expect(record(profiles, await read(profiles, aFirst.id, TOKENS.a).expect(200)).default).toBe(1);
    });
  });

  describe.each(RESOURCES)('$path', (r) => {
    let aIds: string[];
    let bIds: string[];

    beforeAll(async () => {
      aIds = [(await create(r, TOKENS.a, 'A one')).id, (await create(r, TOKENS.a, 'A two')).id] as string[];
      bIds = [(await create(r, TOKENS.b, 'B one')).id] as string[];
    });

    const strangerAttempts: [string, (id: string) => Promise<Response>][] = [
      ['GET', (id) => read(r, id, TOKENS.b)],
      ['PUT', (id) => as(r, TOKENS.b).put(id, r.update)],
      ['DELETE', (id) => as(r, TOKENS.b).del(id)],
    ];

    it.each(strangerAttempts)("%s of A's record with B's token is 404 NOT_FOUND and leaves it unchanged", async (_m, attempt) => {
      const before = await read(r, aIds[0], TOKENS.a).expect(200);
      expectNotFound(await attempt(aIds[0]));
      const after = await read(r, aIds[0], TOKENS.a).expect(200);
      expect(after.body.data).toEqual(before.body.data);
    });

    it("GET of B's record with either of A's tokens is 404 NOT_FOUND too", async () => {
      expectNotFound(await read(r, bIds[0], TOKENS.a));
      expectNotFound(await read(r, bIds[0], TOKENS.a2));
    });

    it("B's list never shows A's records, and X-Total-Count counts only B's", async () => {
      const { ids, total } = await list(r, TOKENS.b);
      expect(ids).toEqual(expect.arrayContaining(bIds));
      for (const id of aIds) expect(ids).not.toContain(id);
      expect(total).toBe(ids.length);
      // Paging counts the same: one record per page, the total still only B's.
      const paged = await list(r, TOKENS.b, { limit: 1 });
      expect(paged.total).toBe(total);
    });

    it("A's list, through either of A's tokens, shows A's records and never B's", async () => {
      for (const token of [TOKENS.a, TOKENS.a2]) {
        const { ids, total } = await list(r, token);
        expect(ids).toEqual(expect.arrayContaining(aIds));
        for (const id of bIds) expect(ids).not.toContain(id);
        expect(total).toBe(ids.length);
      }
    });

    it.each(r.sharedFilters)("filtering on %s=%s, a value both accounts use, returns only the caller's records", async (name, value) => {
      const query = { limit: 100, [name]: value };
      const forA = await list(r, TOKENS.a, query);
      const forB = await list(r, TOKENS.b, query);
      expect({ ids: [...forA.ids].sort(), total: forA.total }).toEqual({ ids: [...aIds].sort(), total: aIds.length });
      expect({ ids: forB.ids, total: forB.total }).toEqual({ ids: bIds, total: bIds.length });
    });

    it("A's second token reads and changes A's records", async () => {
      const read2 = await read(r, aIds[1], TOKENS.a2).expect(200);
      expect(record(r, read2)).toMatchObject({ id: aIds[1], name: 'A two' });

      const updated = await as(r, TOKENS.a2).put(aIds[1], { name: 'A two, renamed' }).expect(200);
      expect(record(r, updated)).toMatchObject({ id: aIds[1], name: 'A two, renamed' });
      expect(record(r, await read(r, aIds[1], TOKENS.a).expect(200)).name).toBe('A two, renamed');
    });

    it("A's second token deletes A's record, for A's first token too", async () => {
      const { id } = await create(r, TOKENS.a, 'A doomed');
      await as(r, TOKENS.a2)
        .del(id as string)
        .expect(200);
      expectNotFound(await read(r, id, TOKENS.a));
      expect((await list(r, TOKENS.a)).ids).not.toContain(id);
    });

    it("B's own record stays B's: B changes it, A's tokens still cannot see it", async () => {
      const updated = await as(r, TOKENS.b).put(bIds[0], { name: 'B one, renamed' }).expect(200);
      expect(record(r, updated).name).toBe('B one, renamed');
      for (const token of [TOKENS.a, TOKENS.a2]) {
        expectNotFound(await as(r, token).put(bIds[0], r.update));
        expectNotFound(await as(r, token).del(bIds[0]));
      }
      expect(record(r, await read(r, bIds[0], TOKENS.b).expect(200)).name).toBe('B one, renamed');
    });
  });

  describeUnlessWorkers(
    "one account's lists do not hold another account's reads",
    "it counts the order of one event loop's answers; with WORKERS the other worker answers lists meanwhile",
    () => {
      const r = RESOURCES[1];

      it("answers B's read before most of the lists A sent at the same moment", async () => {
        for (let i = 0; i < 40; i++) await create(r, TOKENS.a, `A lister ${i}`);
        const { id } = await create(r, TOKENS.b, 'B reader');
        // Connections opened beforehand (keep-alive), so that every request goes out at one moment.
        const agent = new Agent({ keepAlive: true, maxSockets: 17 });
        const get = (path: string) =>
          new Promise<number>((resolve, reject) => {
            const req = httpGet(`${app().baseUrl}${path}`, { agent }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            });
            req.on('error', reject);
          });
        const aList = withToken(withQuery('customers', { company: 'trading', limit: 10, offset: 20 }), TOKENS.a);
        const bRead = withToken(`customers/${id as string}`, TOKENS.b);
        try {
          await Promise.all([...Array.from({ length: 16 }, () => get(aList)), get(bRead)]);
          const answered: string[] = [];
          await Promise.all([
            ...Array.from({ length: 16 }, () => get(aList).then((status) => answered.push(`A ${status}`))),
            get(bRead).then((status) => answered.push(`B ${status}`)),
          ]);
          expect(answered.filter((a) => a !== 'A 200')).toEqual(['B 200']);
          // Run as they came in, A's lists would all go first; in turns, one at a time with other requests taken between them.
          expect(answered.indexOf('B 200')).toBeLessThan(4);
        } finally {
          agent.destroy();
        }
      });
    },
  );
});
