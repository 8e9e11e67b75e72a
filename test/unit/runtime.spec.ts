import { unsupportedRuntime } from '../../src/runtime';

describe('the runtime check', () => {
  it.each(['v22.12.0', 'v22.20.1', 'v24.21.0', 'v25.0.0'])('lets %s run the service', (version) => {
    expect(unsupportedRuntime(version)).toBeUndefined();
  });

  it.each(['v20.20.2', 'v22.11.0', 'v18.20.8'])('stops %s with what the service needs', (version) => {
    expect(unsupportedRuntime(version)).toBe(`This service needs Node 22.12 or later (Node 24 recommended); this is Node ${version.slice(1)}.`);
  });
});
