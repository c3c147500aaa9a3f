import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ParkedTable } from '../../src/shard/parked-table.js';

describe('ParkedTable', () => {
  it('parks, updates and unparks keys, unicode included', () => {
    const t = new ParkedTable();
    t.set('a', 5, 100);
    t.set('ключ-🔑', 7, Number.NaN);
    t.set('a', 6, 90);
    expect(t.size).toBe(2);
    expect(t.snapshotLsn('a')).toBe(6);
    expect(t.timerAt('a')).toBe(90);
    expect(t.timerAt('ключ-🔑')).toBeNaN();
    expect(t.snapshotLsn('b')).toBeUndefined();
    expect(t.delete('a')).toBe(true);
    expect(t.delete('a')).toBe(false);
    expect(t.snapshotLsn('a')).toBeUndefined();
    expect(t.size).toBe(1);
  });

  it('behaves like a Map under random operations, through resizes and tombstones', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('set', 'delete'), fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 10_000 })), { maxLength: 4000 }),
        (ops) => {
          const t = new ParkedTable(16);
          const model = new Map<string, [number, number]>();
          for (const [op, k, v] of ops) {
            const key = `key-${k}`;
            if (op === 'set') {
              t.set(key, v, v * 2);
              model.set(key, [v, v * 2]);
            } else expect(t.delete(key)).toBe(model.delete(key));
          }
          expect(t.size).toBe(model.size);
          for (const [key, [lsn, at]] of model) {
            expect(t.snapshotLsn(key)).toBe(lsn);
            expect(t.timerAt(key)).toBe(at);
          }
          // sweep finds exactly the keys whose timer is due
          const due: string[] = [];
          t.sweep(5_000, (key) => due.push(key));
          expect(due.sort()).toEqual([...model].filter(([, [, at]]) => at <= 5_000).map(([k]) => k).sort());
        },
      ),
      { numRuns: 40 },
    );
  });

  it('costs under 64 bytes per parked key with a timer at 1,000,000 keys', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 1_000_000; i++) t.set(`k${i}`, i, 1_000 + i);
    expect(t.size).toBe(1_000_000);
    expect(t.bytes() / t.size).toBeLessThan(64);
    expect(t.timerAt('k999999')).toBe(1_000 + 999_999);
  });
});
