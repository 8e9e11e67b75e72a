// `npm run bench -- profile <file.cpuprofile> [requests] [--skip S]`: where a CPU profile of the service spent
// its time, by stage (the package or source folder of each sampled function; time in Node's own code
// goes to the nearest caller that has one), in ms and, given the number of requests served while
// profiling, in µs per request. `--skip S` leaves out the first S seconds (start-up, seeding).
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The stage a sampled function belongs to: its npm package, its folder of src/, or Node itself. */
function stageOf({ functionName, url }: ProfileNode['callFrame']): string {
  const pkg = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (pkg) return pkg[1];
  const own = url.match(/\/dist\/(?:src\/)?([^/]+)\//);
  if (own) return `src/${own[1]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)') return functionName;
  return '(native)';
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
    const own = stageOf(byId.get(id)!.callFrame);
    if (!own.startsWith('node:') && own !== '(native)') return own;
    for (let up = parent.get(id); up !== undefined; up = parent.get(up)) {
      const stage = stageOf(byId.get(up)!.callFrame);
      if (!stage.startsWith('node:') && stage !== '(native)') return `${stage} (in Node)`;
    }
    return own;
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
    if (us / busy < 0.005) continue;
    console.log(`| ${stage} | ${(us / 1000).toFixed(0)} | ${((100 * us) / busy).toFixed(1)}% |${requests ? ` ${(us / Number(requests)).toFixed(1)} |` : ''}`);
  }
}
