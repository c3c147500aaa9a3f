import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError, parseDuration } from '../../src/index.js';
import { show } from '../../src/core/errors.js';

const UNITS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

/** Calls parseDuration and says what came of it: a number, or the error it threw. */
function outcome(value: unknown): number | SluiceError {
  try {
    return parseDuration(value, 'subscriber "s": pace.debounce');
  } catch (error) {
    if (!(error instanceof SluiceError))
      throw new Error(`parseDuration(${show(value)}) threw something else than a SluiceError: ${String(error)}`);
    return error;
  }
}

describe('parseDuration (fuzzed)', () => {
  it('reads the documented forms', () => {
    expect(
      ['500 ms', '10s', '30 seconds', '2 minutes', '1 hour', '1 day', 250, '1.5 s', ' 3 MIN '].map((v) =>
        parseDuration(v, 'x'),
      ),
    ).toEqual([500, 10_000, 30_000, 120_000, 3_600_000, 86_400_000, 250, 1500, 180_000]);
  });

  it('accepts every number-and-unit text, spaced or not, in any case', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.constantFrom(...Object.keys(UNITS)),
        fc.constantFrom('', ' ', '  '),
        fc.boolean(),
        (n, unit, gap, upper) => {
          const text = `${n}${gap}${upper ? unit.toUpperCase() : unit}`;
          expect(parseDuration(text, 'x')).toBe(n * UNITS[unit]!);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('never throws anything but PACE_BAD_DURATION quoting the text, and never returns anything but a whole number of ms >= 0', () => {
    const texts = fc.oneof(
      fc.string(),
      fc.stringMatching(/^[ \d.a-zA-Z-]{0,12}$/),
      fc.tuple(fc.double(), fc.constantFrom(...Object.keys(UNITS), 'fortnight', 'x', '')).map(([n, u]) => `${n} ${u}`),
    );
    fc.assert(
      fc.property(fc.oneof(texts, fc.anything(), fc.double(), fc.integer()), (value) => {
        const r = outcome(value);
        if (typeof r === 'number') {
          expect(Number.isSafeInteger(r) && r >= 0).toBe(true);
          expect(typeof value === 'number' || typeof value === 'string').toBe(true);
        } else {
          expect(r.code).toBe('PACE_BAD_DURATION');
          expect(r.message).toContain(`subscriber "s": pace.debounce: ${show(value)} is not a duration`);
        }
      }),
      { numRuns: 5000 },
    );
  });
});
