// @ts-check
// `npm run test:cluster`: the fault suite on the cluster of docker-compose.cluster.yml (three
// KurrentDB nodes, a three-member MongoDB replica set, two instances of the service). It brings the
// cluster up from empty volumes, puts write load on both instances over HTTP, and meanwhile stops
// the KurrentDB leader, cuts a node off the network, and steps the MongoDB primary down during a
// rebuild. It then checks that no acknowledged write is lost, that each write reads back on the
// other instance at once (read-your-writes), that no record reads blank, and that every read model
// equals a fresh rebuild. It tears the cluster down at the end (KEEP_CLUSTER=1 leaves it up).
// Without a Docker engine it says why and runs nothing, as test/run-integration.js does.
//
// Plain JavaScript on Node's own modules, so it needs no build and jest (testRegex on .ts files)
// leaves it alone. Settings: CLUSTER_SEED_RECORDS (records created before the faults, so that a
// rebuild lasts long enough to be interrupted; default 30000), CLUSTER_WRITERS (concurrent writers
// during the faults, default 8), CLUSTER_PARTITION_SECONDS (default 45: longer than the 30 s in
// which a subscription gone silent must be replaced, issue 33 item 1).
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const { writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');

const COMPOSE_FILE = join(__dirname, '..', '..', 'docker-compose.cluster.yml');
const PROJECT = 'pcs-cluster';
const RUN = randomBytes(4).toString('hex');
const TOKEN = `faults-${randomBytes(16).toString('hex')}`;
// Interpolated into the compose file: both instances take this token, and count no rate limit
// (the load and the final reads make far more than the default 6,000 requests a minute).
const ENV = { ...process.env, ACCESS_TOKENS: `${TOKEN}:faults`, RATE_LIMIT_REQUESTS: '0' };
const INSTANCES = { 'service-a': 'http://127.0.0.1:3001', 'service-b': 'http://127.0.0.1:3002' };
const NAMES = /** @type {(keyof typeof INSTANCES)[]} */ (Object.keys(INSTANCES));
const ESDB_NODES = ['esdb1', 'esdb2', 'esdb3'];
const REPLICA_SET_URI = 'mongodb://mongo1:27017,mongo2:27017,mongo3:27017/profiles_customers?replicaSet=rs0';
const SEED_RECORDS = setting('CLUSTER_SEED_RECORDS', 30000);
const WRITERS = setting('CLUSTER_WRITERS', 8);
const PARTITION_MS = setting('CLUSTER_PARTITION_SECONDS', 45) * 1000;
/** How long one write may go unacknowledged, retried as docs/api.md says, before the suite fails it. */
const ACK_BOUND_MS = 120_000;

/** @param {string} name @param {number} fallback */
function setting(name, fallback) {
  const raw = process.env[name];
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer; got "${raw}"`);
  return Number(raw);
}

/** @param {string} text */
const firstLine = (text) => text.trim().split('\n')[0] ?? '';
const log = (/** @type {string} */ line) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

const failures = /** @type {string[]} */ ([]);
/** @param {string} message */
function fail(message) {
  failures.push(message);
  // The first ones say what went wrong; the rest are counted in the summary.
  if (failures.length <= 20) log(`FAIL ${message}`);
}

// ---- Docker ---------------------------------------------------------------------------------

/** Why the suite cannot run here, or null when a Docker engine and Compose v2 answer. */
function missingDocker() {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8' });
  if (info.error) return `the docker command cannot be run (${info.error.message})`;
  if (info.status !== 0) return `no Docker engine answers (docker info: ${firstLine(info.stderr || info.stdout)})`;
  const compose = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
  if (compose.status !== 0) return `Docker Compose v2 is not installed (docker compose version: ${firstLine(compose.stderr || compose.stdout)})`;
  return null;
}

const composeArgs = (/** @type {string[]} */ args) => ['compose', '-f', COMPOSE_FILE, '-p', PROJECT, ...args];

/** For the steps before and after the load (up, down, logs), which may block the event loop. */
function composeSync(/** @type {string[]} */ args, inherit = false) {
  return spawnSync('docker', composeArgs(args), { env: ENV, encoding: 'utf8', maxBuffer: 1 << 30, stdio: inherit ? 'inherit' : 'pipe' });
}

/**
 * A docker command that does not block the event loop: the writers keep writing while a fault is
 * injected. Resolves with its exit code and output.
 * @param {string[]} args
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
function docker(args) {
  return new Promise((resolve) => {
    const child = spawn('docker', args, { env: ENV });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) => resolve({ code: null, stdout, stderr: String(error) }));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
const compose = (/** @type {string[]} */ args) => docker(composeArgs(args));

/**
 * Polls until `probe` returns something, or null after `ms`.
 * @template T @param {number} ms @param {() => Promise<T | null>} probe @returns {Promise<T | null>}
 */
async function until(ms, probe, every = 1000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > deadline) return null;
    await sleep(every);
  }
}

// ---- The stores' own view --------------------------------------------------------------------

/**
 * The cluster as one node's gossip sees it (GET /gossip: `members` with `state` and `isAlive`,
 * each named by the host it advertises, its service name here), or null when it does not answer.
 * @param {string} node
 * @returns {Promise<{ name: string, state: string, isAlive: boolean }[] | null>}
 */
async function gossipOf(node) {
  const { code, stdout } = await compose(['exec', '-T', node, 'curl', '-fsS', '--max-time', '3', 'http://localhost:2113/gossip']);
  if (code !== 0) return null;
  try {
    return JSON.parse(stdout).members.map((/** @type {any} */ m) => ({ name: m.httpEndPointIp, state: m.state, isAlive: m.isAlive }));
  } catch {
    return null;
  }
}

/** The leader that one of `nodes` reports, or null. @param {string[]} nodes */
async function leaderSeenBy(nodes) {
  for (const node of nodes) {
    const leader = (await gossipOf(node))?.find((m) => m.isAlive && m.state === 'Leader');
    if (leader) return leader.name;
  }
  return null;
}

/** True once `node` sees three live members: one leader, two followers. @param {string} node */
async function clusterWholeFrom(node) {
  const states = ((await gossipOf(node)) ?? [])
    .filter((m) => m.isAlive)
    .map((m) => m.state)
    .sort();
  return states.join(',') === 'Follower,Follower,Leader';
}

/** The service name of MongoDB's primary, asked of mongo1 (never taken down here), or null. */
async function mongoPrimary() {
  const { code, stdout } = await compose(['exec', '-T', 'mongo1', 'mongosh', '--quiet', '--eval', "print(db.hello().primary || '')"]);
  const primary = stdout.trim().split(':')[0];
  return code === 0 && primary ? primary : null;
}

/**
 * Every read model's live generation and its documents, read on the primary. Documents are
 * compared as canonical JSON (keys sorted) keyed by id.
 * @returns {Promise<Map<string, { live: number, docs: Map<string, string> }>>}
 */
async function readModelSnapshot() {
  // One line per read model (the names are those of src/read-store/mongodb-mapping.ts).
  const script = `
    db.read_models.find().forEach((m) => {
      const docs = db.getCollection('rm_' + m._id + '__g' + m.live).find().toArray();
      print(EJSON.stringify({ name: m._id, live: m.live, docs }, { relaxed: true }));
    });`;
  const { code, stdout, stderr } = await compose(['exec', '-T', 'mongo1', 'mongosh', REPLICA_SET_URI, '--quiet', '--eval', script]);
  if (code !== 0) throw new Error(`Cannot read the read models: ${firstLine(stderr)}`);
  const models = new Map();
  for (const line of stdout.split('\n').filter((l) => l.startsWith('{'))) {
    const { name, live, docs } = JSON.parse(line);
    models.set(name, { live: Number(live), docs: new Map(docs.map((/** @type {any} */ d) => [JSON.stringify(d._id), canonical(d)])) });
  }
  return models;
}

/** @param {unknown} value @returns {string} */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(/** @type {any} */ (value)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

// ---- HTTP -----------------------------------------------------------------------------------

/**
 * @typedef {{ status: number, etag: string | null, total: number, retryAfter: number, json: any, text: string }} Answer
 * @param {string} base @param {string} method @param {string} path @param {object} [body] @param {Record<string, string>} [headers]
 * @returns {Promise<Answer>} status 0 when no answer came (refused, reset, timed out)
 */
async function http(base, method, path, body, headers = {}) {
  try {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // Not JSON: json stays null, the text is returned.
    }
    const header = (/** @type {string} */ name) => res.headers.get(name);
    return { status: res.status, etag: header('etag'), total: Number(header('x-total-count')), retryAfter: Number(header('retry-after')) || 0, json, text };
  } catch (error) {
    return { status: 0, etag: null, total: NaN, retryAfter: 0, json: null, text: String(/** @type {any} */ (error)?.cause ?? error) };
  }
}

/** @param {'customers' | 'profiles'} kind @param {any} json The record in a create, update or read answer. */
function recordIn(kind, json) {
  const wrapper = kind === 'customers' ? 'Customer' : 'Profile';
  const data = json?.data;
  return Array.isArray(data) ? data[0]?.[wrapper] : data?.[wrapper];
}

async function waitReady(ms = 180_000) {
  for (const name of NAMES) {
    const ready = await until(ms, async () => (await http(INSTANCES[name], 'GET', '/health/ready')).status === 200 || null);
    if (!ready) fail(`${name} not ready (GET /health/ready) within ${ms / 1000} s`);
  }
}

// ---- The writes and what they must leave ------------------------------------------------------

/**
 * Every acknowledged write, by record: what the last acknowledged write set, and its ETag.
 * @typedef {{ kind: 'customers' | 'profiles', id: string, fields: Record<string, string>, etag: string | null, deleted: boolean }} Acked
 * @type {Map<string, Acked>}
 */
const ledger = new Map();
const counts = { writes: 0, retries: 0, readsUnavailable: 0 };

/**
 * Sends a write until it is acknowledged (2xx), retrying as docs/api.md "Retrying safely" says
 * (a create with the same Idempotency-Key, a PUT as it is; a DELETE that finds nothing on a retry
 * went through the first time). Attempts alternate between the instances, so a write is not held
 * up by one instance alone. Returns the answer and the instance that gave it, or null (a failure).
 * @param {string} label @param {number} n @param {(base: string) => Promise<Answer>} send @param {boolean} [isDelete]
 * @returns {Promise<{ answer: Answer, at: keyof typeof INSTANCES } | null>}
 */
async function untilAcknowledged(label, n, send, isDelete = false) {
  const deadline = Date.now() + ACK_BOUND_MS;
  for (let attempt = 0; ; attempt++) {
    const at = NAMES[(n + attempt) % 2];
    const answer = await send(INSTANCES[at]);
    const acknowledged = (answer.status >= 200 && answer.status < 300) || (isDelete && attempt > 0 && answer.status === 404);
    if (acknowledged) {
      counts.writes++;
      return { answer, at };
    }
    // 503 (a store away, or saved but not yet readable), 409 (too many writers, or the same key in
    // flight), 429, and no answer at all are worth a retry; anything else is a failure.
    if (![0, 409, 429, 503].includes(answer.status)) {
      fail(`${label} on ${at}: answered ${answer.status} ${answer.text.slice(0, 300)}`);
      return null;
    }
    if (Date.now() > deadline) {
      fail(`${label}: not acknowledged within ${ACK_BOUND_MS / 1000} s; last answer ${answer.status} ${answer.text.slice(0, 300)}`);
      return null;
    }
    counts.retries++;
    await sleep(Math.min(5000, Math.max(250, answer.retryAfter * 1000)));
  }
}

/**
 * Whether an answer to a read shows the record as last acknowledged: read-your-writes right after
 * a write, no lost write at the end. A record with an empty name is blank: every record written
 * here has one.
 * @param {Acked} entry @param {Answer} answer @param {string} where
 */
function checkRead(entry, answer, where) {
  const what = `${where}: ${entry.kind} ${entry.id}`;
  if (entry.deleted) {
    if (answer.status !== 404) fail(`${what} was deleted (acknowledged) but reads ${answer.status}`);
    return;
  }
  if (answer.status !== 200) return fail(`${what} (acknowledged at ETag ${entry.etag}) reads ${answer.status} ${answer.text.slice(0, 200)}`);
  const record = recordIn(entry.kind, answer.json);
  if (!record?.name) return fail(`${what} reads blank: ${answer.text.slice(0, 300)}`);
  if (answer.etag !== entry.etag) return fail(`${what} reads ETag ${answer.etag}, the last write acknowledged ${entry.etag}`);
  for (const [field, value] of Object.entries(entry.fields)) {
    if (record[field] !== value) return fail(`${what} reads ${field} ${JSON.stringify(record[field])}, acknowledged ${JSON.stringify(value)}`);
  }
}

/**
 * Reads the record on an instance and checks it. A 503, a 429 or no answer is not a stale read:
 * retried for 10 s, then counted as unavailable (reported, not failed).
 * @param {Acked} entry @param {keyof typeof INSTANCES} at @param {string} context
 */
async function readBack(entry, at, context) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await http(INSTANCES[at], 'GET', `/v1/${entry.kind}/${entry.id}`);
    if (![0, 429, 503].includes(answer.status)) return checkRead(entry, answer, `${context}, read on ${at}`);
    if (Date.now() > deadline) return void counts.readsUnavailable++;
    await sleep(250);
  }
}

const other = (/** @type {keyof typeof INSTANCES} */ at) => (at === 'service-a' ? 'service-b' : 'service-a');

/**
 * @param {'customers' | 'profiles'} kind @param {string} tag letters and digits, unique in this run
 * @param {number} n picks the instance @param {boolean} readAfter
 */
async function create(kind, tag, n, readAfter) {
  const unique = `${RUN}x${tag}`;
  /** @type {Record<string, string>} */
  const fields = kind === 'customers' ? { name: `Customer ${unique}`, email: `c${unique}@example.com` } : { name: `Profile ${unique}`, slug: `p${unique}` };
  const key = randomUUID();
  const acked = await untilAcknowledged(`create ${kind} ${unique}`, n, (base) => http(base, 'POST', `/v1/${kind}`, fields, { 'idempotency-key': key }));
  if (!acked) return null;
  const record = recordIn(kind, acked.answer.json);
  if (!record?.id) return (fail(`create ${kind} ${unique}: no id in ${acked.answer.text.slice(0, 200)}`), null);
  /** @type {Acked} */
  const entry = { kind, id: record.id, fields, etag: acked.answer.etag, deleted: false };
  ledger.set(entry.id, entry);
  if (readAfter) await readBack(entry, other(acked.at), `after its create on ${acked.at}`);
  return entry;
}

/** @param {Acked} entry @param {number} n */
async function update(entry, n) {
  const fields = { name: `${entry.fields.name.split(' v')[0]} v${n}` };
  const acked = await untilAcknowledged(`update ${entry.kind} ${entry.id}`, n, (base) => http(base, 'PUT', `/v1/${entry.kind}/${entry.id}`, fields));
  if (!acked) return;
  entry.fields = { ...entry.fields, ...fields };
  entry.etag = acked.answer.etag;
  await readBack(entry, other(acked.at), `after its update on ${acked.at}`);
}

/** @param {Acked} entry @param {number} n */
async function remove(entry, n) {
  const acked = await untilAcknowledged(`delete ${entry.kind} ${entry.id}`, n, (base) => http(base, 'DELETE', `/v1/${entry.kind}/${entry.id}`), true);
  if (!acked) return;
  entry.deleted = true;
  await readBack(entry, other(acked.at), `after its delete on ${acked.at}`);
}

/**
 * One writer of the load: creates, updates and deletes records of its own, one write at a time,
 * each read back on the other instance, until `stop.requested`. Its own records only, so the last
 * acknowledged write of each record is known.
 * @param {number} w @param {{ requested: boolean }} stop
 */
async function writer(w, stop) {
  /** @type {Acked[]} */
  const live = [];
  for (let n = 0; !stop.requested; n++) {
    const roll = Math.random();
    const tag = `${w}w${n}`;
    if (live.length < 5 || roll < 0.4) {
      const entry = await create(roll < 0.1 ? 'profiles' : 'customers', tag, n, true);
      if (entry) live.push(entry);
    } else if (roll < 0.9) {
      await update(live[Math.floor(Math.random() * live.length)], n);
    } else {
      await remove(live.splice(Math.floor(Math.random() * live.length), 1)[0], n);
    }
  }
}

/** Creates `total` records, 32 at a time, so that a rebuild has enough events to be interrupted. @param {number} total */
async function seed(total) {
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < total && failures.length === 0) {
        const n = next++;
        await create(n % 10 === 0 ? 'profiles' : 'customers', `s${n}`, n, false);
        if (n % 5000 === 0 && n > 0) log(`  seeded ${n} records`);
      }
    }),
  );
  log(`Seeded ${total} records in ${Math.round((Date.now() - started) / 1000)} s`);
}

// ---- The faults -----------------------------------------------------------------------------

async function stopTheLeader() {
  const leader = await leaderSeenBy(ESDB_NODES);
  if (!leader) return fail('no KurrentDB node reports a leader before the stop');
  log(`Fault 1: stopping the KurrentDB leader, ${leader}, under write load`);
  const stopped = await compose(['stop', leader]);
  if (stopped.code !== 0) return fail(`docker compose stop ${leader}: ${firstLine(stopped.stderr)}`);
  const rest = ESDB_NODES.filter((n) => n !== leader);
  const next = await until(60_000, async () => {
    const l = await leaderSeenBy(rest);
    return l && l !== leader ? l : null;
  });
  if (!next) fail(`the two other nodes elected no leader within 60 s of stopping ${leader}`);
  else log(`  ${next} leads now; writing on two nodes for 20 s`);
  await sleep(20_000);
  await compose(['start', leader]);
  if (!(await until(120_000, () => clusterWholeFrom(leader).then((whole) => whole || null)))) {
    fail(`${leader} did not rejoin a whole cluster within 120 s of its start`);
  } else log(`  ${leader} is back as a member`);
}

async function partitionANode() {
  // The leader: the node whose loss the service feels most, since it writes and subscribes there.
  const node = await leaderSeenBy(ESDB_NODES);
  if (!node) return fail('no KurrentDB node reports a leader before the partition');
  const id = (await compose(['ps', '-q', node])).stdout.trim();
  const inspected = await docker(['inspect', '-f', '{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}', id]);
  const networks = inspected.stdout.trim().split(/\s+/).filter(Boolean);
  if (!id || networks.length === 0) return fail(`cannot find ${node}'s container or its networks`);
  log(`Fault 2: cutting ${node}, the leader, off ${networks.join(', ')} for ${PARTITION_MS / 1000} s`);
  for (const network of networks) {
    const cut = await docker(['network', 'disconnect', network, id]);
    if (cut.code !== 0) return fail(`docker network disconnect ${network} ${node}: ${firstLine(cut.stderr)}`);
  }
  const rest = ESDB_NODES.filter((n) => n !== node);
  const next = await until(60_000, async () => {
    const l = await leaderSeenBy(rest);
    return l && l !== node ? l : null;
  });
  if (!next) fail(`the two connected nodes elected no leader within 60 s of cutting ${node} off`);
  else log(`  ${next} leads the connected side`);
  await sleep(PARTITION_MS);
  for (const network of networks) {
    // A reconnected container loses its compose aliases: the others and the services find it by
    // its service name, the host it advertises.
    const joined = await docker(['network', 'connect', '--alias', node, network, id]);
    if (joined.code !== 0) fail(`docker network connect ${network} ${node}: ${firstLine(joined.stderr)}`);
  }
  if (!(await until(120_000, () => clusterWholeFrom(node).then((whole) => whole || null)))) {
    fail(`${node} did not rejoin a whole cluster within 120 s of its reconnection`);
  } else log(`  ${node} is back as a member`);
}

async function stepDownThePrimaryMidRebuild() {
  const primary = await mongoPrimary();
  if (!primary) return fail('no MongoDB primary before the stepdown');
  log(`Fault 3: a rebuild of every read model on service-b, and ${primary}, the primary, stepping down during it`);
  const rebuild = spawn('docker', composeArgs(['exec', '-T', 'service-b', 'node', 'dist/cli.js', 'projections', 'rebuild', 'all', '--grace-seconds', '0']), {
    env: ENV,
  });
  let stderr = '';
  rebuild.stderr.on('data', (chunk) => (stderr += chunk));
  rebuild.stdout.resume();
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => rebuild.on('close', (code) => resolve(code)));
  let done = false;
  exited.then(() => (done = true));
  // The CLI's first progress line ("profiles, customers: 5,000 events …"): it is reading events.
  const reading = await until(120_000, async () => done || /: [\d,]+ events/.test(stderr) || null, 100);
  const stepped = await compose(['exec', '-T', primary, 'mongosh', '--quiet', '--eval', 'rs.stepDown(30)']);
  if (done || !reading || /are live/.test(stderr)) {
    fail(
      `the rebuild had ${done ? 'ended' : 'swapped in'} before ${primary} stepped down: seed more (CLUSTER_SEED_RECORDS); its output: ${stderr.slice(-500)}`,
    );
  }
  const next = await until(60_000, async () => {
    const p = await mongoPrimary();
    return p && p !== primary ? p : null;
  });
  if (!next) fail(`no other primary within 60 s of ${primary}'s stepdown (rs.stepDown: ${firstLine(stepped.stderr || stepped.stdout)})`);
  else log(`  ${next} is the primary now`);
  const code = await Promise.race([exited, sleep(300_000, 'hung', { ref: false })]);
  if (code === 'hung') {
    rebuild.kill();
    return fail(`the rebuild did not end within 300 s of the stepdown; its output: ${stderr.slice(-500)}`);
  }
  // 0: it rode out the stepdown; 1: it failed on it and dropped what it filled (docs/operators.md).
  // Either way the live read models must be intact, which the final comparison checks.
  if (code !== 0 && code !== 1) fail(`the rebuild exited ${code}; its output: ${stderr.slice(-500)}`);
  else log(`  the rebuild exited ${code}: ${firstLine(stderr.trim().split('\n').slice(-1)[0] ?? '')}`);
}

// ---- The checks at the end --------------------------------------------------------------------

/** Every acknowledged write, read on both instances. */
async function checkEveryWrite() {
  const entries = [...ledger.values()];
  log(`Reading back ${entries.length} records on both instances`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < entries.length) {
        const entry = entries[next++];
        for (const at of NAMES) await readBack(entry, at, 'at the end');
      }
    }),
  );
}

/** Each list, paged through on both instances: as many records as acknowledged live, none blank, none unknown. */
async function checkLists() {
  for (const kind of /** @type {const} */ (['customers', 'profiles'])) {
    const expected = [...ledger.values()].filter((e) => e.kind === kind && !e.deleted).length;
    for (const at of NAMES) {
      const seen = new Set();
      for (let page = 1; ; page++) {
        const answer = await http(INSTANCES[at], 'GET', `/v1/${kind}?limit=100&page=${page}`);
        if (answer.status !== 200) return fail(`list of ${kind} on ${at}, page ${page}: ${answer.status} ${answer.text.slice(0, 200)}`);
        if (page === 1 && answer.total !== expected) fail(`list of ${kind} on ${at} counts ${answer.total} (X-Total-Count); ${expected} acknowledged live`);
        for (const item of answer.json.data) {
          const record = item[kind === 'customers' ? 'Customer' : 'Profile'];
          if (!record?.name) fail(`list of ${kind} on ${at} shows a blank record: ${JSON.stringify(item)}`);
          else if (!ledger.has(record.id) || ledger.get(record.id)?.deleted)
            fail(`list of ${kind} on ${at} shows ${record.id}, which no acknowledged write left live`);
          seen.add(record?.id);
        }
        if (answer.json.data.length < 100) break;
      }
      if (seen.size !== expected) fail(`list of ${kind} on ${at} holds ${seen.size} records; ${expected} acknowledged live`);
    }
  }
}

/** The read models as the service left them, then rebuilt from every event by the CLI: equal. */
async function checkAgainstARebuild() {
  const before = await readModelSnapshot();
  for (const name of ['customers', 'profiles']) if (!before.has(name)) fail(`read model ${name} not found in MongoDB's read_models`);
  log(`Rebuilding every read model (${[...before.keys()].join(', ')}) to compare`);
  const rebuilt = await compose(['exec', '-T', 'service-a', 'node', 'dist/cli.js', 'projections', 'rebuild', 'all', '--grace-seconds', '0']);
  if (rebuilt.code !== 0) return fail(`projections rebuild all exited ${rebuilt.code}: ${rebuilt.stderr.slice(-500)}`);
  const after = await readModelSnapshot();
  for (const [name, served] of before) {
    const fresh = after.get(name);
    if (!fresh || fresh.live <= served.live) {
      fail(`read model ${name}: the rebuild did not swap in a new generation (live ${served.live}, then ${fresh?.live})`);
      continue;
    }
    if (served.docs.size === 0) fail(`read model ${name} is empty`);
    const differing = [...new Set([...served.docs.keys(), ...fresh.docs.keys()])].filter((id) => served.docs.get(id) !== fresh.docs.get(id));
    if (differing.length > 0) {
      const id = differing[0];
      fail(
        `read model ${name}: ${differing.length} of ${served.docs.size} documents differ from a fresh rebuild, e.g. ${id}:\n` +
          `  served  ${served.docs.get(id) ?? '(none)'}\n  rebuilt ${fresh.docs.get(id) ?? '(none)'}`,
      );
    } else log(`  ${name}: ${served.docs.size} documents, equal to a fresh rebuild`);
  }
}

// ---- The run --------------------------------------------------------------------------------

function tearDown() {
  if (failures.length > 0) {
    const file = join(tmpdir(), `pcs-cluster-${RUN}.log`);
    writeFileSync(file, composeSync(['logs', '--no-color', '--timestamps']).stdout ?? '');
    log(`The cluster's logs: ${file}`);
  }
  if (process.env.KEEP_CLUSTER === '1') return log(`KEEP_CLUSTER=1: the cluster stays up (docker compose -f ${COMPOSE_FILE} down -v to remove it)`);
  log('Tearing the cluster down');
  composeSync(['down', '-v', '--remove-orphans']);
}

/** @returns {Promise<boolean>} whether it ran */
async function main() {
  const missing = missingDocker();
  if (missing) {
    console.log(`Skipping the cluster fault suite: ${missing}.`);
    console.log('It needs a Docker engine with Compose v2 (docs/operators.md, "Running on a cluster").');
    return false;
  }
  process.once('SIGINT', () => (tearDown(), process.exit(130)));
  // From empty volumes: the counts and the comparison below assume this run wrote everything.
  composeSync(['down', '-v', '--remove-orphans']);
  log('Starting the cluster (docker compose -f docker-compose.cluster.yml up -d --build --wait)');
  const up = composeSync(['up', '-d', '--build', '--wait', '--wait-timeout', '600'], true);
  try {
    if (up.status !== 0) return (fail(`docker compose up exited ${up.status}`), true);
    await waitReady();
    if (failures.length > 0) return true;
    await seed(SEED_RECORDS);
    if (failures.length > 0) return true;

    const stop = { requested: false };
    log(`Write load: ${WRITERS} writers on both instances`);
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w, stop));
    await sleep(10_000);
    await stopTheLeader();
    await partitionANode();
    await stepDownThePrimaryMidRebuild();
    await sleep(15_000); // the load on the healed cluster
    stop.requested = true;
    await Promise.all(writers);
    log(`Load stopped: ${counts.writes} writes acknowledged, ${counts.retries} retries, ${counts.readsUnavailable} read-backs unavailable for 10 s`);

    await waitReady();
    await checkEveryWrite();
    await checkLists();
    await checkAgainstARebuild();
    return true;
  } finally {
    tearDown();
  }
}

main().then(
  (ran) => {
    if (failures.length > 0) {
      console.log(`\nThe cluster fault suite FAILED: ${failures.length} failure(s); the first ones are above.`);
      process.exitCode = 1;
    } else if (ran) console.log(`\nThe cluster fault suite passed: ${ledger.size} records, every check held.`);
  },
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
