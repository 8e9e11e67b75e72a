// `npm run bench -- profile <file.cpuprofile> [requests] [--skip S]`: where a CPU profile of the service spent
// its time, by stage of a request (from the package or source file of each sampled function; time
// in Node's own code goes to the nearest caller outside it), in ms and, given the number of requests served while
// profiling, in µs per request. `--skip S` leaves out the first S seconds (start-up, seeding).
import { readFileSync } from 'node:fs';

/** What bench/stalls.ts reads of a profile too. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A file of one of these npm packages. */
const pkg = (...names: string[]) => new RegExp(`node_modules/(${names.join('|')})/`);
/** A file of the service under one of these paths of src/ (as built into dist/). */
export const own = (...paths: string[]) => new RegExp(`/dist/(src/)?(${paths.join('|')})`);

/** Stages of a request, by the file of a function: the first that matches. */
const STAGES: [RegExp, string][] = [
  [own('http/rate-limit'), 'rate limits'],
  [own('http/access-token'), 'authentication'],
  [pkg('pino', 'sonic-boom', 'on-exit-leak-free', 'fast-redact', 'pino-std-serializers', 'quick-format-unescaped', 'atomic-sleep'), 'request log'],
  [own('logging/'), 'request log'],
  [pkg('prom-client', 'tdigest', 'bintrees'), 'metrics'],
  [own('metrics/'), 'metrics'],
  [pkg('helmet'), 'request id, security headers, request-line checks'],
  [own('http/edge', 'http/request-context', 'http/undecodable-path'), 'request id, security headers, request-line checks'],
  [pkg('raw-body', 'body-parser', 'iconv-lite', 'bytes', 'type-is', 'content-type', 'media-typer', 'unpipe', 'http-errors'), 'body reading and JSON'],
  [own('http/json-body'), 'body reading and JSON'],
  [pkg('class-validator', 'class-transformer', 'reflect-metadata', 'validator', 'libphonenumber-js'), 'validation'],
  [own('http/body-validation', 'http/field-rules', 'http/list-query', 'http/record-id', 'http/etag'), 'validation'],
  [
    pkg(
      'router',
      'express',
      'parseurl',
      'path-to-regexp',
      'finalhandler',
      'qs',
      'encodeurl',
      'send',
      'depd',
      'on-finished',
      'vary',
      'cookie',
      'accepts',
      'negotiator',
      'proxy-addr',
      'fresh',
      'range-parser',
      'etag',
    ),
    'Express (router, request, response)',
  ],
  [pkg('@nestjs/[^/]+', 'rxjs', 'tslib', 'uid', 'iterare'), 'NestJS (routing, pipes, CQRS buses)'],
  // Node makes each request and response in the service's own classes (json-express.adapter.ts).
  [own('http/json-express'), 'Node (HTTP parsing, sockets, timers)'],
  [own('sealing/', 'key-store/'), 'encryption and data keys'],
  [pkg('better-sqlite3'), 'storage (SQLite, projections)'],
  [own('read-store/', 'event-store/', 'storage/', 'stores/', 'projections/', 'records/'), 'storage (SQLite, projections)'],
  [own('customers/', 'profiles/', 'idempotency/', 'audit/'), 'controllers and handlers'],
  [own('http/'), 'writing the answer'],
];

/** The stage a sampled function belongs to, or undefined for Node's own code (it takes its caller's). */
function stageOf({ functionName, url }: ProfileNode['callFrame']): string | undefined {
  if (functionName === '(idle)') return '(idle)';
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(program)') return 'V8 and Node (no JS frame)';
  if (url.startsWith('node:') || url === '') return undefined;
  return STAGES.find(([pattern]) => pattern.test(url))?.[1] ?? 'other';
}

export async function main(args: string[]): Promise<void> {
  const skipAt = args.indexOf('--skip');
  const skipMicros = skipAt >= 0 ? Number(args[skipAt + 1]) * 1e6 : 0;
  const [file, requests] = args.filter((_, i) => skipAt < 0 || (i !== skipAt && i !== skipAt + 1));
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const stageOfSample = (id: number): string => {
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) {
      const stage = stageOf(byId.get(node)!.callFrame);
      if (stage) return stage;
    }
    return 'Node (HTTP parsing, sockets, timers)';
  };
  const micros = new Map<string, number>();
  let elapsed = 0;
  profile.samples.forEach((id, i) => {
    elapsed += profile.timeDeltas[i] ?? 0;
    if (elapsed < skipMicros) return;
    const stage = stageOfSample(id);
    micros.set(stage, (micros.get(stage) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const busy = [...micros].filter(([s]) => s !== '(idle)').reduce((sum, [, us]) => sum + us, 0);
  console.log(`Busy: ${(busy / 1000).toFixed(0)} ms${requests ? `, ${(busy / Number(requests)).toFixed(1)} µs per request over ${requests} requests` : ''}\n`);
  console.log(`| Stage | ms | share |${requests ? ' µs per request |' : ''}`);
  console.log(`|---|---:|---:|${requests ? '---:|' : ''}`);
  for (const [stage, us] of [...micros].filter(([s]) => s !== '(idle)').sort((a, b) => b[1] - a[1])) {
    console.log(`| ${stage} | ${(us / 1000).toFixed(0)} | ${((100 * us) / busy).toFixed(1)}% |${requests ? ` ${(us / Number(requests)).toFixed(1)} |` : ''}`);
  }
}
