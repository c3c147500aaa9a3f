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
        fc.array(fc.tuple(fc.constantFrom('set', 'delete'), fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 0, max: 10_000 })), { minLength: 2000, maxLength: 4000, size: 'max' }),
        (ops) => {
          const t = new ParkedTable(16);
          // 800 keys first: the table grows (1,024 slots hold 768), then random sets and deletes leave tombstones.
          const model = new Map<string, [number, number]>();
          for (let k = 0; k < 800; k++) t.set(`key-${k * 3}`, k, k * 2), model.set(`key-${k * 3}`, [k, k * 2]);
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

  it('gives back every key exactly as it was parked, lone surrogates included (UTF-8 would make them all U+FFFD)', () => {
    const keys = ['\uD800', '\uDC00', '\uFFFD', '\uDBFF\uDFFF', 'x\uD800', 'x\uFFFD', 'x\uDFFFy', '', 'plain', 'ключ-🔑'];
    const t = new ParkedTable();
    keys.forEach((k, i) => t.set(k, i, 100 + i));
    expect(t.size).toBe(keys.length);
    keys.forEach((k, i) => expect(t.entry(k)).toEqual({ ref: i, timer: 100 + i }));
    expect([...t.keys()].sort()).toEqual([...keys].sort());
    const frozen = t.frozenKeys();
    expect(keys.every((k) => frozen.unread(k))).toBe(true);
    expect(frozen.unread('\uDFFF')).toBe(false);
    expect(frozen.next(100).sort()).toEqual([...keys].sort());
    const due: string[] = [];
    t.sweep(Number.POSITIVE_INFINITY, (k) => due.push(k));
    expect(due.sort()).toEqual([...keys].sort());
    expect(t.delete('\uD800')).toBe(true);
    expect(t.entry('\uDC00')).toEqual({ ref: 1, timer: 101 });
    expect(t.entry('\uFFFD')).toEqual({ ref: 2, timer: 102 });
  });

  it('takes keys of 65,535 bytes and more (a coordinator key is the subscriber, a separator and the user key), through resizes and compactions', () => {
    const long = [65_534, 65_535, 65_536, 200_000].map((n) => 'k'.repeat(n));
    const keys = [...long, ...long.map((k) => `${k}\uD800`), 'short', '\uDC00'];
    const t = new ParkedTable();
    keys.forEach((k, i) => t.set(k, i, i));
    for (let i = 0; i < 3_000; i++) t.set(`filler-${i}`, i, i); // grows the table: a rehash of every entry
    for (let round = 0; round < 3; round++) for (const k of keys) t.delete(k), t.set(k, round, round); // garbage: compactions
    expect(t.size).toBe(keys.length + 3_000);
    keys.forEach((k) => expect(t.entry(k)).toEqual({ ref: 2, timer: 2 }));
    expect(t.snapshotLsn('k'.repeat(65_537))).toBeUndefined();
    const back = new Set(t.keys());
    expect(keys.every((k) => back.has(k))).toBe(true);
    const frozen = t.frozenKeys();
    expect(keys.every((k) => frozen.unread(k))).toBe(true);
  });

  it('does not grow under churn: keys parked and unparked over and over leave no garbage behind', () => {
    const t = new ParkedTable();
    const keys = Array.from({ length: 500 }, (_, i) => `customer-${i}-${'x'.repeat(i % 40)}`);
    let most = 0;
    for (let round = 0; round < 200; round++) {
      for (const k of keys) t.set(k, round, round);
      most = Math.max(most, t.bytes());
      for (const k of keys) t.delete(k);
    }
    expect(t.size).toBe(0);
    // 1,024 slots of 23 bytes, and a key arena of at most twice the 64 KiB of garbage it tolerates, plus the live keys
    // (20 KB). Unparked keys' bytes once stayed in the arena for good: 16 KB a round, 3.3 MB here.
    expect(most).toBeLessThan(1_024 * 23 + 2 * (64 * 1024 + 20_000) + 1_024);
    for (const k of keys) expect(t.snapshotLsn(k)).toBeUndefined();
    t.set(keys[7]!, 42, 43);
    expect(t.entry(keys[7]!)).toEqual({ ref: 42, timer: 43 });
  });

  it('keeps keys a frozen copy has not read yet readable while the arena is compacted', () => {
    const t = new ParkedTable();
    const keys = Array.from({ length: 300 }, (_, i) => `k${i}-${'y'.repeat(200)}`);
    for (const k of keys) t.set(k, 1, 1);
    const frozen = t.frozenKeys();
    for (let round = 0; round < 20; round++) {
      for (const k of keys.slice(1)) t.delete(k);
      for (const k of keys.slice(1)) t.set(k, round, round);
    }
    expect(frozen.next(1_000).sort()).toEqual([...keys].sort());
  });

  it('costs under 64 bytes per parked key with a timer at 1,000,000 keys', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 1_000_000; i++) t.set(`k${i}`, i, 1_000 + i);
    expect(t.size).toBe(1_000_000);
    expect(t.bytes() / t.size).toBeLessThan(64);
    expect(t.timerAt('k999999')).toBe(1_000 + 999_999);
  });
});
