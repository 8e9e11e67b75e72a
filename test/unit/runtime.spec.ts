import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { enginesNode, unsupportedRuntime } from '../../src/runtime';

describe('the runtime check', () => {
  it("reads the versions from package.json's engines, as npm ci does", () => {
    const { engines } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(enginesNode()).toBe(engines.node);
  });

  const engines = '^22.15.0 || >=24';

  it.each(['v22.15.0', 'v22.20.1', 'v24.0.0', 'v24.21.0', 'v25.0.0'])('lets %s run the service', (version) => {
    expect(unsupportedRuntime(version, engines)).toBeUndefined();
  });

  it.each(['v20.20.2', 'v22.12.0', 'v22.14.9', 'v23.11.0', 'v18.20.8'])('stops %s with what the service needs', (version) => {
    expect(unsupportedRuntime(version, engines)).toBe(
      `This service needs Node ^22.15.0 || >=24 (package.json's engines; Node 24 recommended); this is Node ${version.slice(1)}.`,
    );
  });

  it('says which form of engines it cannot read rather than guess', () => {
    expect(() => unsupportedRuntime('v24.0.0', '22.x')).toThrow(`package.json's engines.node "22.x" has a form src/runtime.ts does not read: "22.x"`);
  });
});
