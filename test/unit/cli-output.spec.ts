import { failureLine } from '../../src/cli/output';
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
