/**
 * Imported first by main.ts and cli.ts: on a Node older than 22.12 the SQLite driver (better-sqlite3
 * 13) would crash the process, so the service says what it needs instead and exits.
 */
export function unsupportedRuntime(version: string): string | undefined {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 12)) return undefined;
  return `This service needs Node 22.12 or later (Node 24 recommended); this is Node ${version.replace(/^v/, '')}.`;
}

const refusal = unsupportedRuntime(process.version);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}
