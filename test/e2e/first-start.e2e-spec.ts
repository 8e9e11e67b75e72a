import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { startChildService } from '../support/child-service';
import { makeDataDir } from '../support/test-app';

describe('first start without ACCESS_TOKENS', () => {
  it('makes a token, says where it is kept without printing it, and reuses it on the next start', async () => {
    const dataDir = makeDataDir();
    try {
      const first = await startChildService(dataDir, { ACCESS_TOKENS: '' });
      await first.waitForOutput(/made an access token for account \\"default\\" and kept it in .*access-token/);
      const token = readFileSync(join(dataDir, 'access-token'), 'utf8').split(':')[0];
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(first.output()).not.toContain(token);
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
