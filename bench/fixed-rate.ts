// A fixed-rate (open-loop) load, in a process of its own, forked by bench/latency.ts with a
// FixedRateSpec; sends back a FixedRateResult. Request i is due at start + i / rate whatever the
// answers before it, and its latency counts from when it was due: a stall of the service delays
// every request due during it (a closed-loop generator such as wrk would wait, and not count them).
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import type { LoadSpec } from './load-worker';

/** The load of bench/load-worker.ts, at a fixed rate; `connections` keep-alive connections at most: a request due while all are busy waits for one (and that counts). */
export interface FixedRateSpec extends Pick<LoadSpec, 'url' | 'token' | 'method' | 'paths' | 'body' | 'rename' | 'connections' | 'durationSeconds'> {
  rate: number;
}

export interface FixedRateResult {
  requests: number;
  /** Latency from due to the end of the answer, ms. */
  p50: number;
  p99: number;
  max: number;
  /** Answers outside 2xx and errors: a row with any is not a valid figure. */
  failures: number;
  /** What the failures were: each status or error, and how often. */
  failed: Record<string, number>;
  /** How late the generator itself sent requests, ms at most: above a millisecond or two, its own figures are suspect. */
  senderLateMax: number;
}

export function runFixedRate(spec: FixedRateSpec): Promise<FixedRateResult> {
  // FIFO: every connection in turn, so none idles until the server's keep-alive timeout closes it as a request goes out on it (an ECONNRESET).
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections, scheduling: 'fifo' });
  const total = Math.round(spec.rate * spec.durationSeconds);
  const latencies = new Float64Array(total);
  const url = new URL(spec.url);
  const headers: Record<string, string> = { authorization: `Bearer ${spec.token}` };
  if (spec.body) headers['content-type'] = 'application/json';
  let failures = 0;
  const failed: Record<string, number> = {};
  const fail = (reason: string) => {
    failures++;
    failed[reason] = (failed[reason] ?? 0) + 1;
  };
  let done = 0;
  let senderLateMax = 0;
  return new Promise((resolve) => {
    const finish = () => {
      agent.destroy();
      const sorted = latencies.sort();
      const at = (p: number) => sorted[Math.min(total - 1, Math.floor(p * total))];
      resolve({ requests: total, p50: at(0.5), p99: at(0.99), max: sorted[total - 1], failures, failed, senderLateMax });
    };
    const send = (i: number, due: number) => {
      senderLateMax = Math.max(senderLateMax, performance.now() - due);
      const body = spec.body && JSON.stringify(spec.rename ? { ...spec.body, name: `bench ${process.pid} ${i}` } : spec.body);
      const req = request(
        { agent, host: url.hostname, port: url.port, method: spec.method, path: spec.paths[Math.floor(Math.random() * spec.paths.length)], headers },
        (res) => {
          if (res.statusCode! < 200 || res.statusCode! >= 300) fail(`status ${res.statusCode}`);
          res.resume();
          res.once('end', () => {
            latencies[i] = performance.now() - due;
            if (++done === total) finish();
          });
        },
      );
      req.once('error', (error: NodeJS.ErrnoException) => {
        fail(error.code ?? error.message);
        latencies[i] = performance.now() - due;
        if (++done === total) finish();
      });
      req.end(body);
    };
    const start = performance.now() + 10;
    void (async () => {
      for (let i = 0; i < total;) {
        const now = performance.now();
        // Every request due by now goes out now, each timed from its own due time.
        for (; i < total && start + (i * 1000) / spec.rate <= now; i++) send(i, start + (i * 1000) / spec.rate);
        await sleep(1);
      }
    })();
  });
}

if (require.main === module) {
  process.once('message', (spec: FixedRateSpec) => {
    runFixedRate(spec).then(
      (result) => process.send!(result, () => process.exit(0)),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
