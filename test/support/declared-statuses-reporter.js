const { spawn } = require('node:child_process');
const { mkdtempSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

/**
 * Fails the run when a test received a status that the OpenAPI document does not declare for its
 * route: clients generate code from /docs-json, so every answer the service gives must be in it.
 * test/support/observe-statuses.ts records the answers; once the run ends, this reporter asks the
 * built service (dist/, as `npm test` builds it) for its document and compares.
 */
class DeclaredStatusesReporter {
  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'pcs-statuses-'));
    // Read by the test files' setup in the workers, which inherit this environment.
    process.env.OBSERVED_STATUSES_DIR = this.dir;
    this.error = undefined;
  }

  async onRunComplete() {
    try {
      const observed = readdirSync(this.dir).flatMap((file) => readFileSync(join(this.dir, file), 'utf8').split('\n').filter(Boolean));
      if (observed.length === 0) return;
      const undeclared = undeclaredStatuses(observed, await openApiDocument());
      if (undeclared.length > 0) {
        this.error = new Error(
          `Statuses the tests received that /docs-json does not declare for their route:\n${undeclared.map((u) => `  - ${u}`).join('\n')}`,
        );
        process.stderr.write(`\n${this.error.message}\n`);
      }
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  getLastError() {
    return this.error;
  }
}

/** `METHOD /template: status (e.g. path)` for each observed answer the document leaves out. */
function undeclaredStatuses(observed, document) {
  // Express's matching: case-insensitive, a trailing slash allowed. Templates without parameters first.
  const routes = Object.keys(document.paths)
    .sort((a, b) => (a.match(/\{/g) ?? []).length - (b.match(/\{/g) ?? []).length)
    .map((template) => ({ template, pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i') }));
  const found = new Map();
  for (const line of observed) {
    const [method, target, status] = line.split(' ');
    const path = target.split('?')[0];
    const route = routes.find((r) => r.pattern.test(path));
    const operation = route && document.paths[route.template][method.toLowerCase()];
    if (!operation || operation.responses[status]) continue;
    const key = `${method} ${route.template}: ${status}`;
    if (!found.has(key)) found.set(key, `${key} (e.g. ${method} ${path})`);
  }
  return [...found.values()].sort();
}

/** The document as the built service serves it. */
function openApiDocument() {
  const dataDir = mkdtempSync(join(tmpdir(), 'pcs-docs-'));
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', ACCESS_TOKENS: 'docs-token:docs', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk) => {
      output += chunk;
      const url = /Listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (!url) return;
      child.stdout.off('data', onData);
      fetch(`${url.replace(/,$/, '')}/docs-json`)
        .then((res) => res.json())
        .then(resolve, reject);
    };
    child.stdout.on('data', onData);
    child.on('exit', (code) => reject(new Error(`the built service exited (${code}) before serving its document:\n${output}`)));
  }).finally(() => {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
}

module.exports = DeclaredStatusesReporter;
