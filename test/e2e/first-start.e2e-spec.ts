import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import { runFailingStart, startChildService } from '../support/child-service';
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
        await request(second.url).get(`/v1/profiles?access_token=${token}`).expect(200);
      } finally {
        second.process.kill('SIGTERM');
        await second.exited;
      }
      expect(second.output()).not.toContain(token);
      // Once, however many workers serve.
      expect(second.output().match(/Using the access token kept in .*access-token/g)).toHaveLength(1);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a start on a busy port', () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise((resolve) => taken.close(resolve)));

  it('says which port is in use and how to choose another, in one line, before making or opening anything', async () => {
    const dataDir = makeDataDir();
    try {
      const { code, output } = await runFailingStart(dataDir, { PORT: String(port), ACCESS_TOKENS: '' });
      expect({ code, output }).toEqual({ code: 1, output: `Cannot start: port ${port} is in use; set PORT (0 picks a free one)\n` });
      // No store opened and no token made (it would never be shown: it is printed once, on the start that makes it).
      expect(readdirSync(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
