// `npm run bench -- <name> [args]`: runs one benchmark from this folder and prints its figures.
// Benchmarks hold the speed targets; the test suite only asserts behaviour.
const BENCHES: Record<string, () => Promise<{ main(args: string[]): Promise<void> }>> = {
  'audit-and-retries': () => import('./audit-and-retries'),
  operations: () => import('./operations'),
  rebuild: () => import('./rebuild'),
};

async function run(): Promise<void> {
  const [name = 'http', ...args] = process.argv.slice(2);
  const load = BENCHES[name];
  if (!load) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(BENCHES).join(', ') || '(none yet)'}`);
    process.exit(2);
  }
  await (await load()).main(args);
}

run().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
