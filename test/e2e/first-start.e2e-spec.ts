import { rmSync } from 'node:fs';
import request from 'supertest';
import { startChildService } from '../support/child-service';
import { makeDataDir } from '../support/test-app';

describe('first start without ACCESS_TOKENS', () => {
  it('makes a token, prints it once with a working curl line, and reuses it on the next start', async () => {
    const dataDir = makeDataDir();
    try {
      const first = await startChildService(dataDir, { ACCESS_TOKENS: '' });
      const curl = await first.waitForOutput(/curl '([^']+)'/);
      const url = new URL(curl[1]);
      const token = url.searchParams.get('access_token')!;
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      await request(first.url).get(`/v1/profiles?access_token=${token}`).expect(200);
      first.process.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      const second = await startChildService(dataDir, { ACCESS_TOKENS: '' });
      try {
        expect(second.output()).not.toContain(token);
        await request(second.url).get(`/v1/profiles?access_token=${token}`).expect(200);
      } finally {
        second.process.kill('SIGTERM');
        await second.exited;
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
