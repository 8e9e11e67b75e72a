// `npm run bench -- <name> [args]`: runs one benchmark from this folder and prints its figures.
// Benchmarks hold the speed targets; the test suite only asserts behaviour.
import { cpus, loadavg } from 'node:os';

const BENCHES: Record<string, () => Promise<{ main(args: string[]): Promise<void> }>> = {
  http: () => import('./http'),
  'audit-and-retries': () => import('./audit-and-retries'),
  operations: () => import('./operations'),
  rebuild: () => import('./rebuild'),
  profile: () => import('./profile'),
  scale: () => import('./scale'),
  feed: () => import('./feed'),
  'feed-scale': () => import('./feed-scale'),
  tracing: () => import('./tracing'),
  memory: () => import('./memory'),
  latency: () => import('./latency'),
  upcasting: () => import('./upcasting'),
  import: () => import('./import'),
};

async function run(): Promise<void> {
  const given = process.argv.slice(2);
  // `npm run bench -- --scale` means the default benchmark with that option.
  const [name = 'http', ...args] = given[0]?.startsWith('--') ? ['http', ...given] : given;
  const load = BENCHES[name];
  if (!load) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(BENCHES).join(', ') || '(none yet)'}`);
    process.exit(2);
  }
  // A figure means little without the machine it ran on and what else that machine was doing.
  const [oneMinute] = loadavg();
  console.log(`Machine: ${cpus().length} cores, Node ${process.versions.node}, load average ${oneMinute.toFixed(2)} at the start.`);
  await (await load()).main(args);
}

run().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
