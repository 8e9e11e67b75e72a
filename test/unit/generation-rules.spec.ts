import { assertPromotable, assertWritable, builtWith, nextCheckpoint, nextGeneration, schemaFingerprint } from '../../src/read-store/generation-rules';
import { GenerationReplacedError, RebuildBehindError } from '../../src/read-store/read-store.port';

const at = (n: bigint) => ({ commit: n, prepare: n });

describe('the rules of a collection’s generations', () => {
  it('lets a commit or a read by generation name the live or the building generation only', () => {
    expect(assertWritable('c', { live: 2, building: 3 }, 2)).toBe('live');
    expect(assertWritable('c', { live: 2, building: 3 }, 3)).toBe('building');
    expect(() => assertWritable('c', { live: 2, building: 3 }, 1)).toThrow(GenerationReplacedError);
    expect(() => assertWritable('c', { live: 2, building: null }, 3)).toThrow(GenerationReplacedError);
  });

  it('moves a checkpoint only forward', () => {
    expect(nextCheckpoint(null, at(5n))).toEqual(at(5n));
    expect(nextCheckpoint(at(7n), at(5n))).toEqual(at(7n));
    expect(nextCheckpoint(at(7n), at(9n))).toEqual(at(9n));
  });

  it('promotes the building generation only, and not while it is behind the live one (no checkpoint counts as the start)', () => {
    expect(() => assertPromotable('c', { live: 1, building: 2 }, 2, at(5n), at(5n))).not.toThrow();
    expect(() => assertPromotable('c', { live: 1, building: 2 }, 2, null, null)).not.toThrow();
    expect(() => assertPromotable('c', { live: 1, building: 2 }, 2, at(4n), at(5n))).toThrow(RebuildBehindError);
    expect(() => assertPromotable('c', { live: 1, building: 2 }, 2, null, at(0n))).toThrow(RebuildBehindError);
    expect(() => assertPromotable('c', { live: 1, building: 3 }, 2, at(9n), at(5n))).toThrow(GenerationReplacedError);
    expect(() => assertPromotable('c', { live: 2, building: null }, 2, at(9n), at(5n))).toThrow(GenerationReplacedError);
  });

  it('numbers a new generation above every one the collection had', () => {
    expect(nextGeneration([])).toBe(1);
    expect(nextGeneration([1, 4, 2])).toBe(5);
  });

  it('gives a schema the same fingerprint whatever the order of its filters, and another for a filter added or matched otherwise', () => {
    const fingerprint = schemaFingerprint({ name: 'x', filters: { a: 'exact', b: 'contains-ci' } });
    expect(schemaFingerprint({ name: 'x', filters: { b: 'contains-ci', a: 'exact' } })).toBe(fingerprint);
    expect(schemaFingerprint({ name: 'x', filters: { a: 'exact-ci', b: 'contains-ci' } })).not.toBe(fingerprint);
    expect(schemaFingerprint({ name: 'x', filters: { a: 'exact', b: 'contains-ci', c: 'exact' } })).not.toBe(fingerprint);
  });

  it('takes a generation that kept no fingerprint as built with the current schema', () => {
    const schema = { name: 'x', filters: { a: 'exact' as const } };
    expect(builtWith(null, schema)).toBe(true);
    expect(builtWith(schemaFingerprint(schema), schema)).toBe(true);
    expect(builtWith(schemaFingerprint({ name: 'x', filters: {} }), schema)).toBe(false);
  });
});
