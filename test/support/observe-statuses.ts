import { ClientRequest, IncomingMessage } from 'node:http';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Records every answer the tests receive over node:http (supertest and raw-http both use it) as
 * `METHOD path status`, one file per test file, for test/support/declared-statuses-reporter.js to
 * check against the OpenAPI document once the run ends. Node's core modules are shared by every
 * test file a Jest worker runs: the patch goes on once, and each file takes its own lines.
 */
const dir = process.env.OBSERVED_STATUSES_DIR;
const SINK = Symbol.for('pcs.observedStatuses');
type Sink = { lines: string[] };
const shared = process as unknown as Record<symbol, Sink | undefined>;

if (dir) {
  if (!shared[SINK]) {
    const sink: Sink = (shared[SINK] = { lines: [] });
    const emit = ClientRequest.prototype.emit;
    ClientRequest.prototype.emit = function (this: ClientRequest, event: string | symbol, ...args: unknown[]) {
      if (event === 'response') sink.lines.push(`${this.method} ${this.path} ${(args[0] as IncomingMessage).statusCode}`);
      return emit.call(this, event, ...args);
    } as typeof emit;
  }
  afterAll(() => {
    const sink = shared[SINK]!;
    if (sink.lines.length > 0) appendFileSync(join(dir, `${process.pid}.txt`), `${sink.lines.join('\n')}\n`);
    sink.lines = [];
  });
}
