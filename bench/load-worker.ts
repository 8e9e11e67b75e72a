// One autocannon run, in its own process so the load generator does not share the service's or the
// bench runner's event loop. Forked by bench/http.ts with a LoadSpec; sends back a LoadResult.

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
// eslint-disable-next-line @typescript-eslint/no-require-imports
const autocannon: (options: object) => Promise<AutocannonResult> = require('autocannon');

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
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  requests: number;
  /** Answers outside 2xx, errors and timeouts: a row with any is not a valid figure. */
  failures: number;
}

function run(spec: LoadSpec): Promise<LoadResult> {
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

process.once('message', (spec: LoadSpec) => {
  run(spec).then(
    (result) => process.send!(result, () => process.exit(0)),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
});
