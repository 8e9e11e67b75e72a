import { duration, failureLine } from '../../src/cli/output';
import { ProgressReporter } from '../../src/cli/progress';
import { GenerationReplacedError } from '../../src/read-store/read-store.port';

const coded = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('the CLI: a failure the operator can act on is one line', () => {
  it('says a rebuild was replaced by a later one, not a stack', () => {
    expect(failureLine(new GenerationReplacedError('customers', 4))).toBe(
      'Stopped: another rebuild started after this one took its place (Generation 4 of customers is no longer live or building); that one goes on.',
    );
  });

  it.each(['EACCES', 'EPERM', 'EROFS', 'SQLITE_CANTOPEN', 'SQLITE_READONLY'])('says a store refused to open (%s) is most likely the wrong user', (code) => {
    expect(failureLine(coded(code, `${code}: refused, open '/srv/data/service.sqlite'`))).toBe(
      `Cannot open the store (${code}: refused, open '/srv/data/service.sqlite'): run the command as the service's user, on its data directory.`,
    );
  });

  it('leaves a bug to its stack', () => {
    expect(failureLine(new TypeError('x is undefined'))).toBeUndefined();
    expect(failureLine(coded('ENOSPC', 'no space left on device'))).toBeUndefined();
  });
});

describe('the CLI: durations', () => {
  it('gives tenths under ten seconds, so a short rebuild does not read "in 0s"', () => {
    expect([0, 0.257, 9.4, 9.96, 59.4, 61, 3600].map(duration)).toEqual(['0.0s', '0.3s', '9.4s', '10s', '59s', '1m01s', '60m00s']);
  });

  it("ends a 51-event rebuild's progress with its time and rate", () => {
    const written: string[] = [];
    const reporter = new ProgressReporter({ isTTY: false, write: (line: string) => written.push(line) } as unknown as NodeJS.WriteStream);
    reporter.update({ projection: 'customers', done: 51, total: 51, swapping: false }, { ms: 257 });
    expect(written).toEqual(['customers: done  51 events in 0.3s, 198 events/s\n']);
  });
});
