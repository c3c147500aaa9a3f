import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonValue, writtenAsParsed } from '../../src/pace/json-value.js';

const viaText = (v: unknown): unknown => {
  const text = JSON.stringify(v);
  return text === undefined ? undefined : JSON.parse(text);
};

describe('jsonValue', () => {
  it('gives what JSON text would give back, for any value JSON.stringify takes (property)', () => {
    const odd = fc.oneof(
      fc.constant(undefined),
      fc.constant(Number.NaN),
      fc.constant(Infinity),
      fc.date({ noInvalidDate: true }),
      fc.constant(() => 1),
      fc.constant(Symbol('s')),
    );
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue(),
        odd,
        fc.array(tie('tree')),
        fc.dictionary(fc.string(), tie('tree')),
      ),
    }));
    fc.assert(
      fc.property(tree, (v) => void expect(jsonValue(v)).toStrictEqual(viaText(v))),
      { numRuns: 2000 },
    );
  });

  it('copies: the result shares nothing with the input', () => {
    const input = { a: [1, { b: 2 }] };
    const out = jsonValue(input) as typeof input;
    (input.a[1] as { b: number }).b = 3;
    expect(out).toEqual({ a: [1, { b: 2 }] });
  });

  it('throws as JSON.stringify does on a BigInt or a cycle', () => {
    expect(() => jsonValue({ n: 1n })).toThrow(TypeError);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => jsonValue(cycle)).toThrow(/circular/);
  });
});

describe('writtenAsParsed', () => {
  /** Whether JSON writes `v` back as the very value (numbers compared with Object.is). */
  const roundTrips = (v: unknown): boolean => {
    try {
      expect(JSON.parse(JSON.stringify(v))).toEqual(v);
      return true;
    } catch {
      return false;
    }
  };

  it('is true exactly for parsed values JSON writes back as they are', () => {
    const text = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.constantFrom('-0', '[1, -0.0]', '{"a": {"b": [1e400]}}', '-1e999', '{"__proto__": -0}', '[0, -0e5]'),
    );
    fc.assert(
      fc.property(text, (t) => {
        const v: unknown = JSON.parse(t);
        expect(writtenAsParsed(v)).toBe(roundTrips(v));
      }),
      { numRuns: 500 },
    );
  });

  it('is false, without throwing, for a value nested past the stack', () => {
    const deep: unknown = JSON.parse('['.repeat(200_000) + ']'.repeat(200_000));
    expect(writtenAsParsed(deep)).toBe(false);
  });
});
