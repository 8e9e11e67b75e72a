import { JSON_CT, startTestApp, TestApp, withToken } from '../support/test-app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('creates and reads a customer', async () => {
    const created = await t.http.post(withToken('customers/')).send({ name: 'Bob', email: 'bob@example.com' }).expect(201);
    expect(created.headers['content-type']).toBe(JSON_CT);
    const id = created.body.data.Customer.id;
    const read = await t.http.get(withToken(`customers/${id}`)).expect(200);
    expect(read.body.data[0].Customer).toMatchObject({ id, name: 'Bob', email: 'bob@example.com' });
  });
});
