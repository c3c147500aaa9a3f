import { describe, expect, it } from 'vitest';
import { ParkedTable } from '../../src/shard/parked-table.js';

// A measurement at scale, kept out of the suite that mutation testing runs against each mutant (it takes
// seconds here, and minutes with every expression of the table instrumented).
describe('ParkedTable at scale', () => {
  it('costs under 64 bytes per parked key with a timer at 1,000,000 keys', () => {
    const t = new ParkedTable();
    for (let i = 0; i < 1_000_000; i++) t.set(`k${i}`, i, 1_000 + i);
    expect(t.size).toBe(1_000_000);
    expect(t.bytes() / t.size).toBeLessThan(64);
    expect(t.timerAt('k999999')).toBe(1_000 + 999_999);
  });
});
