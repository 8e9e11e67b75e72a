import type { Express } from 'express';
import { describeUnlessWorkers } from '../support/stores';
import { startTestApp, TestApp, withToken } from '../support/test-app';

type ExpressApp = Express & { handle(req: object, res: object, next?: unknown): void };

describeUnlessWorkers('request and response objects', 'it looks inside the app, in this process', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  // Express sets these prototypes on every request; set already, it changes nothing (see json-express.adapter.ts).
  it('are born with the prototypes Express gives them', async () => {
    const app = t.app.getHttpAdapter().getInstance() as ExpressApp;
    const handle = app.handle;
    const born: [object, object][] = [];
    app.handle = function (req, res, next) {
      born.push([Object.getPrototypeOf(req), Object.getPrototypeOf(res)]);
      return handle.call(this, req, res, next);
    };
    try {
      await t.http.get(withToken('customers?limit=1')).expect(200);
      await t.http.post(withToken('customers')).send({ name: 'Ada', email: 'ada@example.com' }).expect(201);
    } finally {
      app.handle = handle;
    }
    expect(born).toHaveLength(2);
    for (const [request, response] of born) {
      expect(request).toBe(app.request);
      expect(response).toBe(app.response);
    }
  });
});
