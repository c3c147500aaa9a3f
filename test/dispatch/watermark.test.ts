import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Watermark } from '../../src/dispatch/watermark.js';

/**
 * The model: offsets delivered in a list, a set of those finished; the watermark is the first delivered offset
 * not finished (found by walking the list), or the last delivered + 1, or the start when nothing was delivered.
 */
class Model {
  readonly delivered: number[] = [];
  readonly finished = new Set<number>();
  private lowest = 0;
  constructor(private readonly start: number) {}
  watermark(): number {
    while (this.lowest < this.delivered.length && this.finished.has(this.delivered[this.lowest]!)) this.lowest++;
    if (this.lowest < this.delivered.length) return this.delivered[this.lowest]!;
    return this.delivered.length > 0 ? this.delivered[this.delivered.length - 1]! + 1 : this.start;
  }
  window(): number {
    this.watermark();
    return this.delivered.length - this.lowest;
  }
}

type Op = { t: 'deliver'; gap: number } | { t: 'oldest' } | { t: 'any'; pick: number } | { t: 'abandon'; pick: number };

describe('Watermark', () => {
  it('matches a model through long runs of deliveries, completions in any order and abandoned deliveries (property)', () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 5, arbitrary: fc.record({ t: fc.constant('deliver' as const), gap: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 3, arbitrary: fc.record({ t: fc.constant('oldest' as const) }) },
      { weight: 2, arbitrary: fc.record({ t: fc.constant('any' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ t: fc.constant('abandon' as const), pick: fc.nat() }) },
    );
    let longest = 0;
    fc.assert(
      fc.property(
        fc.nat({ max: 1_000 }),
        fc.array(op, { minLength: 1, maxLength: 4_000, size: 'max' }),
        (start, ops) => {
          const w = new Watermark(0, start);
          const m = new Model(start);
          const inFlight: number[] = [];
          let next = start;
          let outstanding = 0;
          const take = (pick: number): number | undefined => {
            if (inFlight.length === 0) return undefined;
            const i = pick % inFlight.length;
            const offset = inFlight[i]!;
            inFlight[i] = inFlight[inFlight.length - 1]!;
            inFlight.pop();
            return offset;
          };
          for (const o of ops) {
            if (o.t === 'deliver') {
              w.delivered(next);
              m.delivered.push(next);
              inFlight.push(next);
              outstanding++;
              next += o.gap;
            } else if (o.t === 'abandon') {
              if (take(o.pick) === undefined) continue;
              w.abandon(); // it stays in flight for the watermark: never committed past
              outstanding--;
            } else {
              const offset =
                o.t === 'oldest'
                  ? inFlight.length > 0
                    ? Math.min(...inFlight.slice(0, 64))
                    : undefined
                  : take(o.pick);
              if (offset === undefined) continue;
              if (o.t === 'oldest') inFlight.splice(inFlight.indexOf(offset), 1);
              const before = m.watermark();
              m.finished.add(offset);
              expect(w.complete(offset)).toBe(m.watermark() !== before);
              outstanding--;
            }
            expect(w.watermark()).toBe(m.watermark());
            expect(w.window()).toBe(m.window());
            expect(w.outstanding).toBe(outstanding);
            longest = Math.max(longest, m.delivered.length);
          }
        },
      ),
      { numRuns: 20 },
    );
    // The runs reached what the name claims: long runs, over a thousand deliveries.
    expect(longest).toBeGreaterThan(1_000);
  });

  it('keeps the watermark at a stuck delivery while a thousand after it finish, through a compaction', () => {
    const w = new Watermark(3, 10);
    expect(w.watermark()).toBe(10);
    for (let o = 10; o < 3_010; o++) w.delivered(o);
    for (let o = 10; o < 2_010; o++) if (o !== 2_000) expect(w.complete(o)).toBe(o < 2_000);
    expect(w.watermark()).toBe(2_000);
    expect(w.window()).toBe(1_010);
    // 2,000 finishes: the first 2,000 entries are dropped (more than half the window), 2,010 leads.
    expect(w.complete(2_000)).toBe(true);
    expect(w.watermark()).toBe(2_010);
    expect(w.window()).toBe(1_000);
    for (let o = 3_009; o > 2_010; o--) expect(w.complete(o)).toBe(false);
    expect(w.watermark()).toBe(2_010);
    expect(w.outstanding).toBe(1);
    expect(w.complete(2_010)).toBe(true);
    expect(w.watermark()).toBe(3_010);
    expect(w.window()).toBe(0);
    expect(w.outstanding).toBe(0);
  });

  it('matches the model when thousands of deliveries finish in a random order (property)', () => {
    let fewest = Infinity;
    let most = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1_100, max: 4_000 }), fc.nat({ max: 2 ** 31 }), (n, seed) => {
        fewest = Math.min(fewest, n);
        most = Math.max(most, n);
        const w = new Watermark(0);
        const m = new Model(0);
        for (let o = 0; o < 2 * n; o += 2) {
          w.delivered(o);
          m.delivered.push(o);
        }
        // A seeded shuffle of every offset but one, which stays in flight until the end.
        const order = m.delivered.slice();
        let x = seed | 1;
        for (let i = order.length - 1; i > 0; i--) {
          x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0;
          const j = x % (i + 1);
          [order[i], order[j]] = [order[j]!, order[i]!];
        }
        const stuck = order.pop()!;
        for (const o of [...order, stuck]) {
          const before = m.watermark();
          m.finished.add(o);
          expect(w.complete(o)).toBe(m.watermark() !== before);
          expect(w.watermark()).toBe(m.watermark());
          expect(w.window()).toBe(m.window());
        }
        expect(w.watermark()).toBe(2 * n - 1); // the last delivered + 1
      }),
      { numRuns: 15 },
    );
    // Every run delivered over 1,024 offsets (enough for the finished ones to be dropped on the way), and some thousands.
    expect(fewest).toBeGreaterThan(1_024);
    expect(most).toBeGreaterThan(2_000);
  });

  it('ignores the completion of an offset it never delivered, and counts abandoned deliveries out', () => {
    const w = new Watermark(0, 5);
    w.delivered(5);
    w.delivered(9);
    w.delivered(12);
    expect(w.complete(7)).toBe(false); // between two in flight: marks neither
    expect(w.complete(13)).toBe(false); // past the last
    expect(w.watermark()).toBe(5);
    expect(w.complete(5)).toBe(true);
    expect(w.watermark()).toBe(9); // 9 is still in flight
    w.abandon();
    expect(w.window()).toBe(2);
    expect(w.complete(12)).toBe(false);
    expect(w.watermark()).toBe(9);
  });

  it('a completion of an offset not in flight (never delivered, past the last, or finished already) marks nothing, not even offsets delivered after it', () => {
    const w = new Watermark(0, 5);
    expect(w.complete(3)).toBe(false); // nothing delivered yet
    expect(w.complete(5)).toBe(false);
    expect(w.watermark()).toBe(5);
    for (const o of [5, 9, 12]) w.delivered(o);
    expect(w.complete(4)).toBe(false); // below every offset in flight
    expect(w.complete(13)).toBe(false); // past the last
    expect(w.complete(20)).toBe(false);
    w.delivered(13); // delivered after its stray completion: still in flight
    w.delivered(20);
    w.delivered(21);
    expect(w.complete(5)).toBe(true);
    expect(w.complete(5)).toBe(false); // finished already
    expect(w.complete(9)).toBe(true);
    expect(w.complete(12)).toBe(true);
    expect(w.watermark()).toBe(13);
    expect(w.window()).toBe(3);
    expect(w.complete(21)).toBe(false);
    expect(w.complete(21)).toBe(false); // finished already, above the watermark
    expect(w.complete(13)).toBe(true);
    expect(w.watermark()).toBe(20);
    expect(w.complete(20)).toBe(true);
    expect(w.watermark()).toBe(22);
    expect(w.window()).toBe(0);
    expect(w.complete(20)).toBe(false); // drained: nothing in flight
    expect(w.complete(22)).toBe(false); // not delivered yet
    w.delivered(22);
    w.delivered(23);
    expect(w.watermark()).toBe(22);
    expect(w.complete(23)).toBe(false);
    expect(w.complete(22)).toBe(true);
    expect(w.watermark()).toBe(24);
  });
});
