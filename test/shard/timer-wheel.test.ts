import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TimerWheel } from '../../src/shard/timer-wheel.js';

/**
 * The owner's side, as ShardCore plays it: each key has at most one timer; setting one adds it to the wheel
 * (when within the horizon) and reports the old entry dropped; a key handed out by `due` has fired, so its
 * timer is cleared. The model of what the wheel holds: every key with a timer that was added.
 */
type Op =
  | { t: 'set'; key: number; inMs: number }
  | { t: 'clear'; key: number }
  | { t: 'due'; advanceMs: number; max: number }
  | { t: 'earliest' };

const TICK = 10;
const HORIZON = 1_000;

describe('TimerWheel', () => {
  // First: it asks for no due() before checking where the wheel starts, so a wheel that does not know where it
  // starts fails here instead of hanging in due().
  it('holds a timer added overdue in the current bucket and hands it out, even asked with an earlier time', () => {
    const wheel = new TimerWheel(10, 1_000, 500);
    const timers = new Map([['late', 120]]);
    wheel.add('late', 120);
    expect(wheel.firstBucketMs()).toBe(500);
    expect(wheel.due(119, 10, (k) => timers.get(k))).toEqual([]);
    expect(wheel.due(500, 10, (k) => timers.get(k))).toEqual(['late']);
  });

  it('hands out timers oldest bucket first after a call that stopped at exactly its `max`, ones added overdue included', () => {
    const wheel = new TimerWheel(10, 10_000, 0);
    const timers = new Map([
      ['k1', 50],
      ['k2', 50],
      ['k3', 50],
    ]);
    for (const [key, at] of timers) wheel.add(key, at);
    const timerOf = (k: string) => timers.get(k);
    expect(wheel.due(100, 3, timerOf).sort()).toEqual(['k1', 'k2', 'k3']);
    timers.clear(); // fired
    for (const [key, at] of [
      ['a', 60],
      ['b', 95],
    ] as const) {
      timers.set(key, at); // both overdue at 100
      wheel.add(key, at);
    }
    expect(wheel.due(100, 1, timerOf)).toEqual(['a']);
    expect(wheel.due(100, 1, timerOf)).toEqual(['b']);
  });

  it('hands out a mass wake oldest bucket first, a chunk at a time', () => {
    const wheel = new TimerWheel(10, 10_000, 0);
    const timers = new Map<string, number>();
    for (let i = 99; i >= 0; i--) {
      timers.set(`k${i}`, i * 10 + 5);
      wheel.add(`k${i}`, i * 10 + 5);
    }
    // Five calls, a known number: a wheel that handed out the same keys again would not make a test loop run on.
    const chunks = Array.from({ length: 5 }, () => {
      const out = wheel.due(5_000, 30, (k) => timers.get(k));
      for (const k of out) timers.delete(k); // fired
      return out;
    });
    expect(chunks.map((c) => c.length)).toEqual([30, 30, 30, 10, 0]);
    expect(chunks.flat()).toEqual(Array.from({ length: 100 }, (_, i) => `k${i}`));
  });

  it('drops stale entries once they are about half of what it holds, and never a live one, at a cost of a few lookups a report', () => {
    const wheel = new TimerWheel(10, 100_000, 0);
    const timers = new Map<string, number>();
    let lookups = 0;
    const timerOf = (k: string) => (lookups++, timers.get(k));
    for (let i = 0; i < 1_000; i++) {
      timers.set(`k${i}`, 50_000 + i);
      wheel.add(`k${i}`, 50_000 + i);
    }
    // Every key's timer moves five times: each move adds an entry and leaves the old one stale.
    let most = 0;
    for (let round = 1; round <= 5; round++) {
      for (let i = 0; i < 1_000; i++) {
        timers.set(`k${i}`, 50_000 + round * 1_000 + i);
        wheel.add(`k${i}`, 50_000 + round * 1_000 + i);
        wheel.dropped(timerOf);
        most = Math.max(most, wheel.size());
        expect(wheel.size()).toBeLessThanOrEqual(2 * timers.size + 64);
      }
    }
    expect(most).toBeGreaterThan(1_900); // stale entries were held for a while: not dropped at every report
    // Each clean-up looks up every entry held, about twice the reports that led to it: never every entry at each
    // report (5,000 reports of a wheel of 1,000 to 2,000 entries).
    expect(lookups).toBeGreaterThan(0);
    expect(lookups).toBeLessThanOrEqual(3 * 5_000);
    expect(wheel.size()).toBeGreaterThanOrEqual(1_000);
    expect(wheel.earliestMs(timerOf)).toBe(55_000);
    const out = wheel.due(100_000, 5_000, timerOf);
    expect(out.sort()).toEqual([...timers.keys()].sort()); // every live key once, from its latest timer
  });

  it('holds about twice its live timers at most, while timers fire and are set again, move, and the earliest is looked up', () => {
    // The owner's side, as ShardCore plays it: a timer fired or moved is reported dropped (the entry handed out
    // is gone already, the moved one is stale); 500 keys always have a timer.
    const wheel = new TimerWheel(10, 100_000, 0);
    const timers = new Map<string, number>();
    let lookups = 0;
    const timerOf = (k: string) => (lookups++, timers.get(k));
    let reports = 0;
    const set = (key: string, at: number) => {
      const had = timers.has(key);
      timers.set(key, at);
      wheel.add(key, at);
      if (had) {
        wheel.dropped(timerOf);
        reports++;
      }
    };
    for (let i = 0; i < 500; i++) set(`k${i}`, 5 + 2 * i);
    for (let i = 0; i < 500; i++) set(`far${i}`, 50_000 + i); // moved later and later: the cursor never reaches them
    let now = 0;
    let fired = 0;
    let most = 0;
    for (let step = 0; step < 3_000; step++) {
      now += 3; // within a bucket: some of its timers are due, the rest stay for the next call
      for (const key of wheel.due(now, 20, timerOf)) {
        fired++;
        set(key, now + 20 + ((step * 7) % 900));
      }
      set(`k${(step * 13) % 500}`, now + 50 + (step % 500)); // moved
      set(`far${step % 500}`, 50_000 + step);
      if (step % 4 === 0) expect(wheel.earliestMs(timerOf)).toBe(Math.min(...timers.values()));
      most = Math.max(most, wheel.size());
    }
    expect(fired).toBeGreaterThan(3_000);
    expect(most).toBeLessThanOrEqual(2 * 1_000 + 64);
    // A few lookups a report: its share of a clean-up, and of due() and earliestMs() going over entries. (Counting
    // entries wrongly makes clean-ups come too late, above, or too often, here.)
    expect(lookups).toBeLessThanOrEqual(4 * reports);
  });

  it('holds no bucket once every timer is cancelled and the clean-up has run: no wake is asked for', () => {
    const wheel = new TimerWheel(10, 10_000, 0);
    const timers = new Map<string, number>();
    for (let i = 0; i < 100; i++) {
      timers.set(`k${i}`, 500 + 10 * i); // a bucket each
      wheel.add(`k${i}`, 500 + 10 * i);
    }
    const timerOf = (k: string) => timers.get(k);
    timers.clear(); // cancelled all at once, then each reported
    for (let i = 0; i < 100; i++) wheel.dropped(timerOf);
    expect(wheel.size()).toBe(0); // dropped by the clean-up (past half of 100 reports), not by due() or earliestMs()
    expect(wheel.firstBucketMs()).toBeUndefined();
  });

  it('goes on to the next bucket once one is handed out, and stops at one whose timers are not due', () => {
    const wheel = new TimerWheel(10, 10_000, 0);
    const timers = new Map([
      ['a', 5],
      ['b', 15],
      ['c', 25],
      ['d', 27],
    ]);
    for (const [k, at] of timers) wheel.add(k, at);
    const timerOf = (k: string) => timers.get(k);
    expect(wheel.due(26, 10, timerOf).sort()).toEqual(['a', 'b', 'c']); // d, in c's bucket, is not due at 26
    for (const k of ['a', 'b', 'c']) timers.delete(k);
    expect(wheel.due(26, 10, timerOf)).toEqual([]);
    expect(wheel.due(27, 10, timerOf)).toEqual(['d']);
    timers.set('e', 3); // added overdue: lands in the current bucket, not one the wheel has passed
    wheel.add('e', 3);
    expect(wheel.due(27, 10, timerOf)).toEqual(['e']);
    expect(wheel.size()).toBe(0); // every entry handed out
    timers.set('f', 65); // after buckets with none: the wheel steps over them
    wheel.add('f', 65);
    expect(wheel.due(70, 10, timerOf)).toEqual(['f']);
  });

  it('picks the earliest timer within its bucket, whichever order they were added in', () => {
    const wheel = new TimerWheel(100, 10_000, 0);
    const timers = new Map([
      ['b', 250],
      ['a', 210],
      ['c', 299],
      ['d', 420],
    ]);
    for (const [key, at] of timers) wheel.add(key, at);
    expect(wheel.firstBucketMs()).toBe(200);
    expect(wheel.earliestMs((k) => timers.get(k))).toBe(210);
    timers.delete('a'); // cancelled: the bucket's other timers remain
    expect(wheel.earliestMs((k) => timers.get(k))).toBe(250);
    timers.delete('b');
    timers.delete('c');
    expect(wheel.earliestMs((k) => timers.get(k))).toBe(420);
    expect(wheel.firstBucketMs()).toBe(400);
    timers.delete('d');
    expect(wheel.earliestMs((k) => timers.get(k))).toBeUndefined();
    expect(wheel.firstBucketMs()).toBeUndefined();
    expect(wheel.size()).toBe(0);
  });

  it('is within the horizon up to and including it', () => {
    const wheel = new TimerWheel(10, 1_000, 0);
    expect(wheel.within(6_000, 5_000)).toBe(true);
    expect(wheel.within(6_001, 5_000)).toBe(false);
  });

  // Last: a mutant that stalls the wheel fails one of the small tests above before this one can hang on it.
  it('hands out exactly the due timers, in bounded chunks, and knows the earliest (property)', () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          t: fc.constant('set' as const),
          key: fc.nat({ max: 300 }),
          inMs: fc.integer({ min: -50, max: 1_500 }),
        }),
      },
      { weight: 2, arbitrary: fc.record({ t: fc.constant('clear' as const), key: fc.nat({ max: 300 }) }) },
      {
        weight: 2,
        arbitrary: fc.record({
          t: fc.constant('due' as const),
          advanceMs: fc.integer({ min: -30, max: 200 }),
          max: fc.integer({ min: 1, max: 40 }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ t: fc.constant('earliest' as const) }) },
    );
    let handedOut = 0;
    let chunked = 0;
    fc.assert(
      fc.property(
        fc.nat({ max: 100_000 }),
        fc.array(op, { minLength: 1, maxLength: 1_500, size: 'max' }),
        (start, ops) => {
          let now = start;
          let latest = start;
          const wheel = new TimerWheel(TICK, HORIZON, now);
          const timers = new Map<string, number>(); // the owner's timers
          const held = new Map<string, number>(); // the model: timers that were added to the wheel
          // The owner tells the wheel of the timers it put there only (a timer beyond the horizon is kept aside).
          const timerOf = (key: string) => held.get(key);
          for (const o of ops) {
            if (o.t === 'set' || o.t === 'clear') {
              const key = `k${o.key}`;
              if (timers.has(key)) {
                timers.delete(key);
                held.delete(key);
                wheel.dropped(timerOf);
              }
              if (o.t === 'set') {
                const at = now + o.inMs;
                timers.set(key, at);
                if (wheel.within(at, now)) {
                  wheel.add(key, at);
                  held.set(key, at);
                }
              }
            } else if (o.t === 'due') {
              now = Math.max(start, now + o.advanceMs); // time may step back a little (a record's own timestamp)
              latest = Math.max(latest, now);
              const due = [...held].filter(([, at]) => at <= now).length;
              const out = wheel.due(now, o.max, timerOf);
              expect(out.length).toBe(Math.min(o.max, due));
              expect(new Set(out).size).toBe(out.length);
              for (const key of out) {
                const at = held.get(key);
                expect(at, `${key} was not due`).toBeLessThanOrEqual(now);
                held.delete(key);
                timers.delete(key); // fired
              }
              handedOut += out.length;
              if (due > o.max) chunked++;
            } else {
              const min = held.size === 0 ? undefined : Math.min(...held.values());
              expect(wheel.earliestMs(timerOf)).toBe(min);
            }
            // Stale entries are cleaned up: the wheel holds at most about twice the live timers.
            expect(wheel.size()).toBeLessThanOrEqual(2 * held.size + 64);
            expect(wheel.size()).toBeGreaterThanOrEqual(held.size);
            // The first bucket starts at the earliest timer's bucket, or at the wheel's cursor (the bucket of the
            // latest time asked about) when that timer was added overdue.
            if (held.size > 0)
              expect(wheel.firstBucketMs()).toBeLessThanOrEqual(
                Math.max(Math.min(...held.values()), Math.floor(latest / TICK) * TICK),
              );
            else expect(wheel.earliestMs(timerOf)).toBeUndefined();
          }
        },
      ),
      { numRuns: 25 },
    );
    expect(handedOut).toBeGreaterThan(1_000);
    expect(chunked).toBeGreaterThan(10);
  }, 60_000);
});
