import { rmSync } from 'node:fs';
import request from 'supertest';
import { startChildService } from '../support/child-service';
import { uid } from '../support/http-assertions';
import { makeDataDir, startTestApp, withToken } from '../support/test-app';

describe('durability', () => {
  it('keeps everything across a restart, and the projections continue from their checkpoints', async () => {
    const first = await startTestApp();
    const customers: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await first.http
        .post(withToken('customers'))
        .send({ name: `C${i}`, email: `c${i}@x.io` })
        .expect(201);
      customers.push(res.body.data.Customer.id);
    }
    await first.http
      .put(withToken(`customers/${customers[0]}`))
      .send({ company: 'Acme' })
      .expect(200);
    await first.http.delete(withToken(`customers/${customers[1]}`)).expect(200);
    const slug = uid('shop');
    const profile = await first.http.post(withToken('profiles')).send({ name: 'Shop', slug }).expect(201);
    const [lastCustomerEvent] = (await first.events.readStream(`customer-${customers[1]}`)).slice(-1);
    await first.close({ keepData: true });

    const second = await startTestApp({ dataDir: first.dataDir });
    try {
      // The customers model starts where it stopped, not from the beginning of the store.
      const ready = await second.http.get('/health/ready').expect(200);
      const resumedAt = ready.body.projections.find((p: { name: string }) => p.name === 'customers').checkpoint;
      // "commit" or "commit/prepare" (formatPosition).
      expect(BigInt(resumedAt.split('/')[0])).toBeGreaterThanOrEqual(lastCustomerEvent.position.commit);
      const list = await second.http.get(withToken('customers')).expect(200);
      expect(list.headers['x-total-count']).toBe('4');
      expect(list.body.data.map((w: { Customer: { id: string } }) => w.Customer.id)).toEqual([customers[4], customers[3], customers[2], customers[0]]);
      const read = await second.http.get(withToken(`customers/${customers[0]}`)).expect(200);
      expect(read.body.data[0].Customer.company).toBe('Acme');
      await second.http.get(withToken(`customers/${customers[1]}`)).expect(404);
      await second.http.get(withToken(`profiles/${profile.body.data.Profile.id}`)).expect(200);
      // The slug is still taken after the restart.
      await second.http.post(withToken('profiles')).send({ slug: slug.toUpperCase() }).expect(409);
      // New writes after the restart are projected once, next to the old ones.
      await second.http.post(withToken('customers')).send({ name: 'After', mobile: '09123456789' }).expect(201);
      const after = await second.http.get(withToken('customers?limit=100')).expect(200);
      expect(after.headers['x-total-count']).toBe('5');
      expect(new Set(after.body.data.map((w: { Customer: { id: string } }) => w.Customer.id)).size).toBe(5);
    } finally {
      await second.close();
    }
  });

  it('loses no acknowledged write when the process is killed with SIGKILL right after the 2xx', async () => {
    const dataDir = makeDataDir();
    try {
      const first = await startChildService(dataDir);
      const acknowledged: { id: string; name: string }[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await request(first.url)
          .post(withToken('customers'))
          .send({ name: `N${i}`, email: `n${i}@x.io` });
        expect(res.status).toBe(201);
        const id = res.body.data.Customer.id;
        const updated = await request(first.url)
          .put(withToken(`customers/${id}`))
          .send({ name: `N${i}-v2` });
        expect(updated.status).toBe(200);
        acknowledged.push({ id, name: `N${i}-v2` });
      }
      first.crash();
      await first.exited;

      const second = await startChildService(dataDir);
      try {
        for (const { id, name } of acknowledged) {
          const res = await request(second.url).get(withToken(`customers/${id}`));
          expect(res.status).toBe(200);
          expect(res.body.data[0].Customer.name).toBe(name);
        }
        const list = await request(second.url).get(withToken('customers?limit=100'));
        expect(list.headers['x-total-count']).toBe(String(acknowledged.length));
      } finally {
        second.process.kill('SIGTERM');
        await second.exited;
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
