import { loadConfig } from '../../src/config/config';
import { givenHeapSettings, heapFlags, memoryLimit, memoryPlan, parseMemoryLimit, sizeFor, UNLIMITED } from '../../src/config/memory';

const MIB = 1024 * 1024;

describe('MEMORY_LIMIT', () => {
  it.each([
    ['268435456', 256 * MIB],
    ['256m', 256 * MIB],
    ['256M', 256 * MIB],
    ['256Mi', 256 * MIB],
    ['512mb', 512 * MIB],
    ['1g', 1024 * MIB],
    ['262144k', 256 * MIB],
    [' 2G ', 2048 * MIB],
  ])('reads %j as bytes, k, m or g (powers of 1024)', (raw, bytes) => {
    expect(parseMemoryLimit(raw)).toBe(bytes);
  });

  it.each(['', 'lots', '256 megs', '1.5g', '-256m', '256t', '0x100'])('refuses %j, naming the variable and the forms it takes', (raw) => {
    expect(() => loadConfig({ MEMORY_LIMIT: raw || 'x' })).toThrow(/^MEMORY_LIMIT must be bytes or a number with k, m or g \(such as 256m or 1g\); got "/);
    if (raw) expect(() => parseMemoryLimit(raw)).toThrow(`got "${raw}"`);
  });

  it('refuses a limit below 128 MiB, which no setting fits', () => {
    expect(() => loadConfig({ MEMORY_LIMIT: '100m' })).toThrow('MEMORY_LIMIT must be at least 128m; got "100m"');
    expect(parseMemoryLimit('128m')).toBe(128 * MIB);
  });

  it("overrides the cgroup's limit; without it the cgroup's is taken, and a cgroup without one (v1's 2^63, libuv's 2^64, 0) means none", () => {
    expect(memoryLimit({ MEMORY_LIMIT: '1g' }, () => 256 * MIB)).toEqual({ bytes: 1024 * MIB, source: 'MEMORY_LIMIT' });
    expect(memoryLimit({}, () => 512 * MIB)).toEqual({ bytes: 512 * MIB, source: 'cgroup' });
    expect(memoryLimit({ MEMORY_LIMIT: '' }, () => 512 * MIB)).toEqual({ bytes: 512 * MIB, source: 'cgroup' });
    for (const none of [0, 2 ** 63 - 4096, 2 ** 64]) expect(memoryLimit({}, () => none)).toBeUndefined();
  });
});

describe('the memory plan', () => {
  it("keeps today's defaults with no limit: 32 MiB semi-spaces, V8's old generation, caches of 10,000, 2,000,000 rowids, glibc's arenas", () => {
    expect(memoryPlan(undefined, 1).server).toEqual({
      semiSpaceMiB: 32,
      recordCacheSize: 10_000,
      keyCacheSize: 10_000,
      rebuildRowids: 2_000_000,
      importBatchRows: 10_000,
      importCacheMiB: 64,
      importRowids: 2_000_000,
    });
    expect(memoryPlan(undefined, 4).server).toBe(UNLIMITED);
    expect(loadConfig({})).toMatchObject({ recordCacheSize: 10_000, keyCacheSize: 10_000, rebuildRowids: 2_000_000 });
  });

  it('gives a 256 MiB container the settings measured for it (8/96, caches of 2,000, 250,000 rowids, 2 arenas; an import: batches of 2,500 rows, 8 MiB page caches, 500,000 rowids)', () => {
    expect(sizeFor(256)).toEqual({
      semiSpaceMiB: 8,
      oldSpaceMiB: 96,
      mallocArenaMax: 2,
      recordCacheSize: 2000,
      keyCacheSize: 2000,
      rebuildRowids: 250_000,
      importBatchRows: 2500,
      importCacheMiB: 8,
      importRowids: 500_000,
    });
  });

  it('grows with the limit, each part bounded', () => {
    expect(sizeFor(512)).toEqual({
      semiSpaceMiB: 16,
      oldSpaceMiB: 192,
      mallocArenaMax: 2,
      recordCacheSize: 4000,
      keyCacheSize: 4000,
      rebuildRowids: 500_000,
      importBatchRows: 5000,
      importCacheMiB: 8,
      importRowids: 1_000_000,
    });
    expect(sizeFor(1024)).toEqual({
      semiSpaceMiB: 32,
      oldSpaceMiB: 384,
      mallocArenaMax: 2,
      recordCacheSize: 8000,
      keyCacheSize: 8000,
      rebuildRowids: 1_000_000,
      importBatchRows: 10_000,
      importCacheMiB: 16,
      importRowids: 2_000_000,
    });
    expect(sizeFor(16 * 1024)).toMatchObject({
      semiSpaceMiB: 32,
      oldSpaceMiB: 6144,
      recordCacheSize: 10_000,
      keyCacheSize: 10_000,
      rebuildRowids: 2_000_000,
      importBatchRows: 10_000,
      importCacheMiB: 64,
      importRowids: 2_000_000,
    });
    // Between the measured points: semi-spaces a power of two, never below 2 MiB nor the old generation below 48.
    expect(sizeFor(384)).toMatchObject({ semiSpaceMiB: 8, oldSpaceMiB: 144, recordCacheSize: 3000, importBatchRows: 3750 });
    expect(sizeFor(100)).toMatchObject({
      semiSpaceMiB: 2,
      oldSpaceMiB: 48,
      recordCacheSize: 781,
      rebuildRowids: 97_656,
      importBatchRows: 1000,
      importCacheMiB: 8,
    });
  });

  it("shares the limit between WORKERS, after the primary's 64 MiB, and keeps the primary small", () => {
    const plan = memoryPlan({ bytes: 1024 * MIB, source: 'cgroup' }, 2);
    expect(plan.perProcessMiB).toBe(480);
    expect(plan.server).toEqual(sizeFor(480));
    expect(plan.primary).toEqual({ semiSpaceMiB: 2, oldSpaceMiB: 48 });
    expect(memoryPlan({ bytes: 256 * MIB, source: 'MEMORY_LIMIT' }, 1)).toMatchObject({ perProcessMiB: 256, server: sizeFor(256) });
  });

  it('sizes the caches and rowids from MEMORY_LIMIT and WORKERS; each one set wins', () => {
    expect(loadConfig({ MEMORY_LIMIT: '256m' })).toMatchObject({ recordCacheSize: 2000, keyCacheSize: 2000, rebuildRowids: 250_000 });
    expect(loadConfig({ MEMORY_LIMIT: '1g', WORKERS: '2' })).toMatchObject({ recordCacheSize: 3750, rebuildRowids: 468_750 });
    expect(loadConfig({ MEMORY_LIMIT: '256m', RECORD_CACHE_SIZE: '50', REBUILD_ROWIDS: '0' })).toMatchObject({
      recordCacheSize: 50,
      keyCacheSize: 2000,
      rebuildRowids: 0,
    });
  });
});

describe("Node's heap flags", () => {
  it('are made for the settings the user did not give, in either spelling, on the command line or in NODE_OPTIONS', () => {
    expect(heapFlags(sizeFor(256))).toEqual(['--max-semi-space-size=8', '--max-old-space-size=96']);
    expect(heapFlags(UNLIMITED)).toEqual(['--max-semi-space-size=32']);
    expect(givenHeapSettings(['--max-old-space-size=200', '--inspect'])).toEqual(['oldSpaceMiB']);
    expect(givenHeapSettings(['--max_semi_space_size=4'])).toEqual(['semiSpaceMiB']);
    expect(givenHeapSettings(['--max-old-space-size-percentage=50'])).toEqual([]);
    expect(heapFlags(sizeFor(256), givenHeapSettings(['--max-old-space-size=200']))).toEqual(['--max-semi-space-size=8']);
  });
});
