// `npm run test:integration`: the contract suites, the protocol tests and the end-to-end HTTP suites
// on EventStoreDB and MongoDB (TEST_STORES=live), one file at a time (they share the servers).
// When either server does not accept connections, says so and runs nothing.
const { spawnSync } = require('node:child_process');
const { connect } = require('node:net');

const env = {
  ...process.env,
  TEST_STORES: 'live',
  EVENTSTORE_CONNECTION_STRING: process.env.EVENTSTORE_CONNECTION_STRING || 'esdb://localhost:2113?tls=false',
  MONGODB_URI: process.env.MONGODB_URI || 'mongodb://localhost:27017/?directConnection=true',
};

/** The first host:port of a connection string (enough to tell whether a server is there). */
function firstHost(uri, defaultPort) {
  const hosts = uri
    .replace(/^[a-z+]+:\/\//i, '')
    .replace(/^[^@/]*@/, '')
    .split(/[/?]/)[0];
  const [host, port] = hosts.split(',')[0].split(':');
  return { host: host || 'localhost', port: Number(port || defaultPort) };
}

function reachable({ host, port }) {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 3000 }, () => (socket.end(), resolve(true)));
    socket.on('timeout', () => (socket.destroy(), resolve(false)));
    socket.on('error', () => resolve(false));
  });
}

(async () => {
  const servers = [
    ['EventStoreDB', firstHost(env.EVENTSTORE_CONNECTION_STRING, 2113)],
    ['MongoDB', firstHost(env.MONGODB_URI, 27017)],
  ];
  const missing = [];
  for (const [name, at] of servers) if (!(await reachable(at))) missing.push(`${name} at ${at.host}:${at.port}`);
  if (missing.length > 0) {
    console.log(`Skipping the integration tests: nothing answers for ${missing.join(' and ')}.`);
    console.log('Start them with `docker compose up -d eventstore mongo`, or set EVENTSTORE_CONNECTION_STRING and MONGODB_URI.');
    return;
  }
  const suites = ['test/contract', 'test/protocol', 'test/e2e', 'test/reliability'];
  const jest = spawnSync(
    process.execPath,
    [require.resolve('jest/bin/jest'), '--runInBand', '--selectProjects', 'in process', ...suites, ...process.argv.slice(2)],
    { env, stdio: 'inherit' },
  );
  process.exitCode = jest.status ?? 1;
})();
