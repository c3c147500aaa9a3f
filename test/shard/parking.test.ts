import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ParkedStates } from '../../src/shard/parked-states.js';
import { TIMER, type Rules, type ShardRecord } from '../../src/shard/rules.js';
import { ShardCore } from '../../src/shard/shard-core.js';
import { StateArena } from '../../src/shard/state-arena.js';

/** Each event counts and sets a timer 100 ms on; the timer outputs the count and resets it (retiring the key). */
interface Counter {
  count: number;
  events: string[];
}
const rules: Rules<Counter, string> = {
  initial: () => ({ count: 0, events: [] }),
  apply(state, record, fx) {
    if (record.type === TIMER) {
      fx.output(`${record.key} fired ${state.count}`);
      return { count: 0, events: [] };
    }
    fx.output(`${record.key} seen ${state.count + 1}`);
    fx.timer(record.at + 100);
    return { count: state.count + 1, events: [...state.events, String(record.data)] };
  },
  retired: (s) => s.count === 0,
};

const view = (core: ShardCore<Counter, string>) =>
  [...core.keys()].sort().map((k) => ({ key: k, state: core.state(k), timer: core.timerOf(k) }));

/** Steps: an event for a key, or a call to `due` at the current time whose keys get a timer record each. */
const stepsArb = fc.array(
  fc.oneof(
    fc.record({
      kind: fc.constant('event' as const),
      key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
      dt: fc.integer({ min: 0, max: 80 }),
    }),
    fc.record({
      kind: fc.constant('due' as const),
      dt: fc.integer({ min: 0, max: 200 }),
      max: fc.integer({ min: 1, max: 4 }),
    }),
  ),
  { maxLength: 150, size: 'max' },
);

/**
 * The rules' meaning, kept by hand beside the core: an event counts, records its data and sets the key's timer
 * 100 ms on; a timer record outputs the count and retires the key.
 */
class Model {
  readonly keys = new Map<string, { state: Counter; timer: number }>();
  readonly outputs: string[] = [];
  apply(r: ShardRecord): void {
    const had = this.keys.get(r.key);
    if (r.type === TIMER) {
      this.outputs.push(`${r.key} fired ${had?.state.count ?? 0}`);
      this.keys.delete(r.key);
      return;
    }
    const state = { count: (had?.state.count ?? 0) + 1, events: [...(had?.state.events ?? []), String(r.data)] };
    this.keys.set(r.key, { state, timer: r.at + 100 });
    this.outputs.push(`${r.key} seen ${state.count}`);
  }
  view() {
    return [...this.keys]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, { state, timer }]) => ({ key, state, timer }));
  }
}

/**
 * Runs the steps on a core and on the model; returns the core's outputs, its view, the records it applied (for a
 * replay) and how many keys `due` named while they were parked. Checks each `due` on the way against the model:
 * every key it names is due, oldest first to a bucket (no key left out is more than a tick older than one
 * named), and none due is left out unless `max` were named.
 */
function run(maxLoadedKeys: number, steps: typeof stepsArb extends fc.Arbitrary<infer T> ? T : never) {
  const core = new ShardCore(rules, { nowMs: 1_000, tickMs: 10, horizonMs: 150, maxLoadedKeys });
  const model = new Model();
  const records: ShardRecord[] = [];
  const outputs: string[] = [];
  let now = 1_000;
  let namedParked = 0;
  const apply = (r: ShardRecord) => {
    records.push(r);
    core.apply(records.length, r);
    model.apply(r);
    outputs.push(...core.release(records.length));
  };
  steps.forEach((s, i) => {
    now += s.dt;
    if (s.kind === 'event') return apply({ key: s.key, at: now, type: 'event', data: `e${i}` });
    const parked = core.parkedCount;
    const named = core.due(now, s.max);
    namedParked += parked - core.parkedCount; // the parked keys it named were loaded
    const timers = new Map([...model.keys].map(([k, { timer }]) => [k, timer]));
    expect(named.every((k) => timers.get(k)! <= now)).toBe(true);
    expect(new Set(named).size).toBe(named.length);
    const left = [...timers].filter(([k, at]) => at <= now && !named.includes(k)).map(([, at]) => at);
    if (named.length < s.max) expect(left).toEqual([]);
    if (named.length > 0 && left.length > 0)
      expect(Math.max(...named.map((k) => timers.get(k)!))).toBeLessThanOrEqual(Math.min(...left) + 10);
    for (const key of named) apply({ key, at: now, type: TIMER });
  }, 60_000);
  expect(outputs).toEqual(model.outputs);
  expect(view(core)).toEqual(model.view());
  expect(core.keyCount).toBe(model.keys.size);
  return { core, outputs, records, view: view(core), namedParked };
}

describe('ShardCore with parked keys', () => {
  it('parked keys behave as loaded ones and as the rules by hand: the same outputs and state for the same records, live and on replay', () => {
    let long = 0;
    let namedParked = 0;
    fc.assert(
      fc.property(stepsArb, fc.integer({ min: 1, max: 3 }), (steps, maxLoaded) => {
        if (steps.length >= 100) long++;
        const parked = run(maxLoaded, steps);
        namedParked += parked.namedParked;
        const reference = new ShardCore(rules, { nowMs: 1_000, tickMs: 10, horizonMs: 150, maxLoadedKeys: 1_000 });
        const outputs = parked.records.flatMap((r, i) => (reference.apply(i + 1, r), reference.release(i + 1)));
        expect(parked.outputs).toEqual(outputs);
        expect(parked.view).toEqual(view(reference));
        expect(parked.core.keyCount).toBe(reference.keyCount);
        const replayed = new ShardCore(rules, { nowMs: 1_000, tickMs: 10, horizonMs: 150, maxLoadedKeys: maxLoaded });
        parked.records.forEach((r, i) => replayed.apply(i + 1, r));
        expect(view(replayed)).toEqual(parked.view);
        run(1_000, steps); // and the checks of due hold with every key loaded
      }),
      { numRuns: 100 },
    );
    expect(long).toBeGreaterThan(12); // runs of 100 steps and more
    expect(namedParked).toBeGreaterThan(200); // timers fired from the parked table, not only from the wheel
  });

  it('parks idle keys beyond maxLoadedKeys, fires their timers oldest first, loading only what it names', () => {
    const core = new ShardCore(rules, { nowMs: 0, tickMs: 10, horizonMs: 1_000, maxLoadedKeys: 10 });
    for (let i = 0; i < 500; i++) core.apply(i + 1, { key: `k${i}`, at: i, type: 'event', data: i });
    expect(core.keyCount).toBe(500);
    expect(core.parkedCount).toBeGreaterThanOrEqual(488); // 10 loaded, give or take a quarter
    expect(core.state('k7')).toEqual({ count: 1, events: ['7'] });
    expect(core.timerOf('k7')).toBe(107);
    expect(core.nextDueMs(0)).toBe(100);
    const parkedBefore = core.parkedCount;
    const first = core.due(10_000, 50);
    expect(first).toHaveLength(50);
    expect(Math.max(...first.map((k) => Number(k.slice(1))))).toBeLessThan(60); // a bucket of 10 ms at a time
    expect(core.parkedCount).toBe(parkedBefore - 50); // only the named ones were loaded
    let lsn = 500;
    for (const key of first) core.apply(++lsn, { key, at: 10_000, type: TIMER });
    const rest: string[] = [];
    for (let call = 0; call < 10; call++) {
      const chunk = core.due(10_000, 50);
      expect(chunk).toHaveLength(call < 9 ? 50 : 0); // the other 450, 50 a call
      for (const key of chunk) core.apply(++lsn, { key, at: 10_000, type: TIMER });
      rest.push(...chunk);
    }
    expect(new Set([...first, ...rest]).size).toBe(500);
    expect(core.keyCount).toBe(0);
    expect(core.nextDueMs(10_000)).toBeUndefined();
  });

  it('snapshots parked and loaded keys alike, each as it was when the snapshot began', () => {
    const core = new ShardCore(rules, { nowMs: 0, maxLoadedKeys: 2 });
    for (let i = 0; i < 6; i++) core.apply(i + 1, { key: `k${i}`, at: i, type: 'event', data: `e${i}` });
    const { lsn } = core.beginSnapshot();
    const first = core.snapshotChunk(2);
    core.apply(7, { key: 'k0', at: 10, type: 'event', data: 'late' }); // a parked key, loaded and changed
    core.apply(8, { key: 'k5', at: 11, type: TIMER }); // a loaded key retired
    core.apply(9, { key: 'new', at: 12, type: 'event', data: 'late' });
    const entries = [...first, ...core.snapshotChunk(3), ...core.snapshotChunk(10)].map(
      (j) => JSON.parse(j) as [string, Counter, number | null],
    );
    core.endSnapshot();
    expect(lsn).toBe(6);
    expect(entries.sort((x, y) => x[0].localeCompare(y[0]))).toEqual(
      Array.from({ length: 6 }, (_, i) => [`k${i}`, { count: 1, events: [`e${i}`] }, i + 100]),
    );
  });
});

describe('ShardCore under churn', () => {
  it('holds parked keys in bounded memory while 2,000 live keys take turns beyond maxLoadedKeys 1,000', () => {
    const keep: Rules<{ n: number }, never> = {
      initial: () => ({ n: 0 }),
      apply: (s) => ({ n: s.n + 1 }),
      retired: () => false,
    };
    const core = new ShardCore(keep, { nowMs: 0, maxLoadedKeys: 1_000 });
    const keys = Array.from({ length: 2_000 }, (_, i) => `tenant-${i}/order-stream`);
    let lsn = 0;
    const pass = (): void => {
      // A stride that is prime to 2,000: every key in turn, in an order that mixes loaded and parked ones.
      for (let i = 0; i < keys.length; i++)
        core.apply(++lsn, { key: keys[(i * 7) % keys.length]!, at: lsn, type: 'tick' });
    };
    for (let round = 0; round < 10; round++) pass();
    const settled = core.parkedBytes();
    let most = settled;
    for (let round = 0; round < 40; round++) {
      pass();
      most = Math.max(most, core.parkedBytes());
    }
    expect(core.keyCount).toBe(2_000);
    expect(core.state(keys[3]!)).toEqual({ n: 50 });
    // Each key was parked and unparked about forty times more: what it holds must not grow with that.
    // (It once did, by every key's bytes at every park: 9.5 MB after 800,000 records.)
    expect(most).toBeLessThan(2 * settled + 256 * 1024);
  });
});

describe('ParkedStates and StateArena', () => {
  it('park and unpark through arena compactions', () => {
    const p = new ParkedStates<{ i: number; pad: string }>();
    const pad = 'x'.repeat(200);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10_000; i++) p.park(`k${i}`, { i: i + round, pad }, i % 2 === 0 ? i : undefined);
      expect(p.size).toBe(10_000);
      for (let i = 0; i < 10_000; i++) {
        expect(p.unpark(`k${i}`)).toEqual({ state: { i: i + round, pad }, timer: i % 2 === 0 ? i : undefined });
      }
      expect(p.size).toBe(0);
    }
  });

  it('makes room at once for the keys a restore parks, keeping those parked already', () => {
    const p = new ParkedStates<{ i: number }>();
    for (let i = 0; i < 100; i++) p.park(`k${i}`, { i }, i);
    p.reserve(20_000, 20_000 * 12); // {"i":20099} is 11 bytes
    const internals = p as unknown as { table: { resize(): void }; arena: { bytes(): number } };
    const resize = vi.spyOn(internals.table, 'resize');
    const arenaBytes = internals.arena.bytes();
    for (let i = 100; i < 20_100; i++) p.parkEncoded(`k${i}`, { i }, i, JSON.stringify({ i }));
    expect(resize).not.toHaveBeenCalled();
    expect(internals.arena.bytes()).toBe(arenaBytes);
    expect(p.size).toBe(20_100);
    for (let i = 0; i < 20_100; i += 997) expect(p.unpark(`k${i}`)).toEqual({ state: { i }, timer: i });
  });

  it('keeps live entries readable at their new offsets after compact', () => {
    const a = new StateArena();
    const refs = Array.from({ length: 100 }, (_, i) => a.put(JSON.stringify({ i })));
    for (let i = 0; i < 100; i += 2) a.free(refs[i]!);
    const live = refs.filter((_, i) => i % 2 === 1);
    a.compact((move) => live.forEach((r, j) => (live[j] = move(r))));
    expect(live.map((r) => JSON.parse(a.text(r)) as { i: number })).toEqual(
      Array.from({ length: 50 }, (_, j) => ({ i: 2 * j + 1 })),
    );
  });
});
