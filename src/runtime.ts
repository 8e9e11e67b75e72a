import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Imported first by main.ts and cli.ts: on a Node that package.json's `engines` does not name, the
 * service says what it needs and exits, rather than crash later (the SQLite driver, better-sqlite3
 * 13, does on Node 20). `engines` is the one place the supported versions are written: npm ci
 * refuses the others by it too (.npmrc's engine-strict).
 */
export function unsupportedRuntime(version: string, engines: string): string | undefined {
  if (satisfies(version, engines)) return undefined;
  return `This service needs Node ${engines} (package.json's engines; Node 24 recommended); this is Node ${version.replace(/^v/, '')}.`;
}

/** Whether the version is in the range, for the forms `engines` uses: `^a.b.c` and `>=a.b.c` (minor and patch optional), joined by `||`. */
function satisfies(version: string, range: string): boolean {
  const have = numbers(version.replace(/^v/, ''));
  return range.split('||').some((alternative) => {
    const form = /^\s*(\^|>=)\s*(\d+(?:\.\d+){0,2})\s*$/.exec(alternative);
    if (!form) throw new Error(`package.json's engines.node "${range}" has a form src/runtime.ts does not read: "${alternative.trim()}"`);
    const least = numbers(form[2]);
    const atLeast = compare(have, least) >= 0;
    return form[1] === '^' ? atLeast && have[0] === least[0] : atLeast;
  });
}

function numbers(version: string): number[] {
  const parts = version.split('.').map(Number);
  return [0, 1, 2].map((i) => parts[i] || 0);
}

function compare(a: number[], b: number[]): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** package.json's `engines.node`: beside src/ and dist/ alike, in the repository and the Docker image. */
export function enginesNode(): string {
  return (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
}

const refusal = unsupportedRuntime(process.version, enginesNode());
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
