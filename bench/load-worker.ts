// One load run, in its own process so the load generator does not share the service's or the bench
// runner's event loop. Forked by bench/http.ts with a LoadSpec; sends back a LoadResult.
// The generator is wrk when it is installed (`apt-get install wrk`): written in C, it takes a small
// share of a core where autocannon, in JavaScript, takes most of one; on a 2-core machine that share
// is taken from the service. Without wrk, autocannon (a dev dependency) runs instead.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The part of autocannon's API used here (it ships no types). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
interface RawRequest {
  path: string;
  body?: string;
}

export interface LoadSpec {
  url: string;
  token: string;
  method: 'GET' | 'POST' | 'PUT';
  /** Each request takes one of these paths at random. */
  paths: string[];
  /** A JSON body; with `rename`, each request's name is new, so every update changes the record. */
  body?: Record<string, string>;
  rename?: boolean;
  connections: number;
  durationSeconds: number;
  /** autocannon even where wrk is installed (to compare with runs made before the bench used wrk). */
  autocannon?: boolean;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  requests: number;
  /** Answers outside 2xx, errors and timeouts: a row with any is not a valid figure. */
  failures: number;
}

/** wrk's version line when it is installed, else undefined. */
export function wrkVersion(): string | undefined {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (probe.error) return undefined;
  return `${probe.stdout}${probe.stderr}`.match(/^wrk (\S+)/m)?.[1] ?? 'unknown version';
}

/** The generator a run uses: wrk if installed, else autocannon. */
export function generatorName(autocannon = false): string {
  if (autocannon) return 'autocannon (as asked)';
  const wrk = wrkVersion();
  return wrk ? `wrk ${wrk}, one thread` : 'autocannon (wrk is not installed)';
}

function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const autocannon: (options: object) => Promise<AutocannonResult> = require('autocannon');
  let n = 0;
  const headers: Record<string, string> = { authorization: `Bearer ${spec.token}` };
  if (spec.body) headers['content-type'] = 'application/json';
  return autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSeconds,
    requests: [
      {
        method: spec.method,
        headers,
        setupRequest: (req: RawRequest) => ({
          ...req,
          path: spec.paths[Math.floor(Math.random() * spec.paths.length)],
          body: spec.body && JSON.stringify(spec.rename ? { ...spec.body, name: `bench ${process.pid} ${++n}` } : spec.body),
        }),
      },
    ],
  }).then((r) => ({
    requestsPerSecond: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
  }));
}

const lua = (value: string) => JSON.stringify(value); // a JSON string of these ASCII values is a valid Lua string

/**
 * The same requests as autocannon's, from a wrk script: a random path each, the body renamed per
 * request when asked, and a JSON summary printed at the end (wrk counts statuses >= 400 as errors;
 * 3xx never occur here).
 */
function wrkScript(spec: LoadSpec): string {
  const json = spec.body ? JSON.stringify(spec.body) : undefined;
  // The body up to its closing brace, so a name can be added per request.
  const open = json && (json === '{}' ? '{' : `${json.slice(0, -1)},`);
  return `
local paths = { ${spec.paths.map(lua).join(', ')} }
local n = 0
wrk.method = ${lua(spec.method)}
wrk.headers["Authorization"] = ${lua(`Bearer ${spec.token}`)}
${json ? 'wrk.headers["Content-Type"] = "application/json"' : ''}
request = function()
  local path = paths[math.random(#paths)]
  ${
    !json
      ? 'return wrk.format(nil, path)'
      : spec.rename
        ? `n = n + 1
  return wrk.format(nil, path, nil, ${lua(open!)} .. '"name":"bench ' .. n .. '"}')`
        : `return wrk.format(nil, path, nil, ${lua(json)})`
  }
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"micros":%d,"p50":%f,"p99":%f,"failures":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;
}

function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'pcs-wrk-'));
  const script = join(dir, 'load.lua');
  writeFileSync(script, wrkScript(spec));
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationSeconds}s`, '--timeout', '10s', '-s', script, spec.url];
  return new Promise<LoadResult>((resolve, reject) => {
    execFile('wrk', args, { encoding: 'utf8' }, (error, stdout, stderr) => {
      rmSync(dir, { recursive: true, force: true });
      const line = stdout.split('\n').find((l) => l.startsWith('{"requests"'));
      if (error || !line) return reject(new Error(`wrk failed: ${error?.message ?? ''}\n${stdout}${stderr}`));
      const r = JSON.parse(line) as { requests: number; micros: number; p50: number; p99: number; failures: number };
      resolve({
        requestsPerSecond: r.requests / (r.micros / 1e6),
        p50: r.p50 / 1000,
        p99: r.p99 / 1000,
        requests: r.requests,
        failures: r.failures,
      });
    });
  });
}

// Run as a forked worker; bench/http.ts imports it only for its types and generatorName().
if (require.main === module) {
  process.once('message', (spec: LoadSpec) => {
    (!spec.autocannon && wrkVersion() ? runWrk(spec) : runAutocannon(spec)).then(
      (result) => process.send!(result, () => process.exit(0)),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
