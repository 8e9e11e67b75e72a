import { createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { runFailingStart } from '../support/child-service';
import { makeDataDir } from '../support/test-app';

/** A local port nothing listens on: connecting to it is refused, as with a server that is down. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('production stores that cannot be used', () => {
  let dataDir: string;
  beforeEach(() => (dataDir = makeDataDir()));
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('stops the start with a clear message when EventStoreDB is unreachable', async () => {
    const port = await closedPort();
    const { code, output } = await runFailingStart(dataDir, {
      EVENTSTORE_CONNECTION_STRING: `esdb://127.0.0.1:${port}?tls=false`,
      STORE_TIMEOUT_MS: '1000',
    });
    expect(code).toBe(1);
    expect(output).toMatch(/^Cannot start: EventStoreDB is unreachable: .*ECONNREFUSED/m);
  });

  it('stops the start with a clear message when MongoDB is unreachable', async () => {
    const port = await closedPort();
    const { code, output } = await runFailingStart(dataDir, {
      MONGODB_URI: `mongodb://127.0.0.1:${port}`,
      STORE_TIMEOUT_MS: '1000',
    });
    expect(code).toBe(1);
    expect(output).toMatch(/^Cannot start: MongoDB is unreachable: .*ECONNREFUSED/m);
  });

  it('stops the start on a connection string the driver cannot parse, naming the variable', async () => {
    const { code, output } = await runFailingStart(dataDir, { EVENTSTORE_CONNECTION_STRING: 'esdb://localhost:2113?tls=maybe' });
    expect(code).toBe(1);
    expect(output).toMatch(/^Configuration error: EVENTSTORE_CONNECTION_STRING cannot be parsed/m);
    const mongo = await runFailingStart(dataDir, { MONGODB_URI: 'mongodb://localhost:27017/?replicaSet=' });
    expect(mongo.code).toBe(1);
    expect(mongo.output).toMatch(/^Configuration error: MONGODB_URI cannot be parsed/m);
  });
});
