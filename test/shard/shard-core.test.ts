import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShardCore } from '../../src/shard/shard-core.js';
import { TIMER, type Rules, type ShardRecord } from '../../src/shard/rules.js';

/** Test rules: each event counts and sets a timer 100 ms on; the timer outputs the count and resets it. */
interface Counter {
  count: number;
  events: string[];
}
type Out = { key: string; kind: 'seen' | 'fired'; count: number; tag: string };
const rules: Rules<Counter, Out> = {
  initial: () => ({ count: 0, events: [] }),
  apply(state, record, fx) {
    if (record.type === TIMER) {
      fx.output({ key: record.key, kind: 'fired', count: state.count, tag: `timer@${record.at}` });
      return { count: 0, events: [] };
    }
    const tag = String(record.data);
    fx.output({ key: record.key, kind: 'seen', count: state.count + 1, tag });
    fx.timer(record.at + 100);
    return { count: state.count + 1, events: [...state.events, tag] };
  },
  retired: (s) => s.count === 0,
};

const snapshot = (core: ShardCore<Counter, Out>) =>
  [...core.keys()].sort().map((k) => ({ key: k, state: core.state(k), timer: core.timerOf(k) }));

/** A run of records for a few keys, up to 120 of them; each step moves time forward a little. */
const recordsArb = fc.array(
  fc.record({ key: fc.constantFrom('a', 'b', 'c', 'd'), dt: fc.integer({ min: 0, max: 80 }), timer: fc.boolean() }),
  { maxLength: 120, size: 'max' },
);

function materialise(steps: { key: string; dt: number; timer: boolean }[]): ShardRecord[] {
  let at = 1_000;
  return steps.map((s, i) => ({ key: s.key, at: (at += s.dt), type: s.timer ? TIMER : 'event', data: `e${i}` }));
}

/**
 * The rules' meaning, written out independently of ShardCore: an event counts, records its tag and sets the key's
 * timer 100 ms on; a timer record outputs the count and retires the key. Returns the outputs of each record and
 * the keys' states and timers after the last.
 */
function model(records: ShardRecord[]): { outputs: Out[][]; view: ReturnType<typeof snapshot> } {
  const keys = new Map<string, { state: Counter; timer: number }>();
  const outputs = records.map((r): Out[] => {
    const had = keys.get(r.key);
    if (r.type === TIMER) {
      keys.delete(r.key);
      return [{ key: r.key, kind: 'fired', count: had?.state.count ?? 0, tag: `timer@${r.at}` }];
    }
    const state = { count: (had?.state.count ?? 0) + 1, events: [...(had?.state.events ?? []), String(r.data)] };
    keys.set(r.key, { state, timer: r.at + 100 });
    return [{ key: r.key, kind: 'seen', count: state.count, tag: String(r.data) }];
  }, 60_000);
  return {
    outputs,
    view: [...keys].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, { state, timer }]) => ({ key, state, timer })),
  };
}

describe('ShardCore', () => {
  it('live state equals the state rebuilt by replaying the log, and the rules applied by hand, at every crash point', () => {
    let long = 0;
    fc.assert(
      fc.property(recordsArb, fc.nat(), (steps, crashSeed) => {
        if (steps.length >= 100) long++;
        const records = materialise(steps);
        const live = new ShardCore(rules, { nowMs: 1_000 });
        const crashAt = records.length === 0 ? 0 : crashSeed % (records.length + 1);
        let atCrash: ReturnType<typeof snapshot> = [];
        records.forEach((r, i) => {
          live.apply(i + 1, r);
          if (i + 1 === crashAt) atCrash = snapshot(live);
        });
        const replayed = new ShardCore(rules, { nowMs: 1_000 });
        records.slice(0, crashAt).forEach((r, i) => replayed.apply(i + 1, r));
        expect(snapshot(replayed)).toEqual(crashAt === 0 ? [] : atCrash);
        expect(snapshot(replayed)).toEqual(model(records.slice(0, crashAt)).view);
        expect(snapshot(live)).toEqual(model(records).view);
      }),
      { numRuns: 300 },
    );
    expect(long).toBeGreaterThan(30); // runs of 100 records and more
  }, 60_000);

  it('releases no output before its record is durable, and each exactly once, in order', () => {
    let long = 0;
    fc.assert(
      fc.property(recordsArb, fc.array(fc.nat(), { maxLength: 40, size: 'max' }), (steps, lags) => {
        if (steps.length >= 100) long++;
        const records = materialise(steps);
        // What each record outputs, by the rules applied by hand.
        const perRecord = model(records).outputs;
        const core = new ShardCore(rules, { nowMs: 1_000 });
        let durable = 0;
        records.forEach((r, i) => {
          core.apply(i + 1, r);
          // The durable position trails the applied one by a random lag, and only moves forward.
          const lag = lags.length === 0 ? 0 : lags[i % lags.length]! % 5;
          const before = durable;
          durable = Math.max(durable, i + 1 - lag);
          // exactly the outputs of the records that became durable, nothing later, none twice
          expect(core.release(durable)).toEqual(perRecord.slice(before, durable).flat());
        });
        expect(core.release(records.length)).toEqual(perRecord.slice(durable).flat());
        expect(core.waiting).toBe(0);
      }),
      { numRuns: 300 },
    );
    expect(long).toBeGreaterThan(30);
  });

  it('serialises a snapshot in chunks, seeing each key as it was when the snapshot began', () => {
    const core = new ShardCore(rules, { nowMs: 0 });
    for (let i = 0; i < 5; i++) core.apply(i + 1, { key: `k${i}`, at: i, type: 'event', data: `e${i}` });
    const { lsn } = core.beginSnapshot();
    const first = core.snapshotChunk(2);
    core.apply(6, { key: 'k4', at: 10, type: 'event', data: 'late' }); // changes a key not serialised yet
    core.apply(7, { key: 'new', at: 11, type: 'event', data: 'late' }); // a key born after the snapshot began
    const rest = [...core.snapshotChunk(2), ...core.snapshotChunk(2)];
    expect(core.snapshotChunk(2)).toEqual([]);
    core.endSnapshot();
    const entries = [...first, ...rest].map((j) => JSON.parse(j) as [string, Counter, number | null]);
    expect(lsn).toBe(5);
    expect(entries.map((e) => e[0])).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    expect(entries[4]).toEqual(['k4', { count: 1, events: ['e4'] }, 104]); // as of LSN 5
    const restored = new ShardCore(rules, { nowMs: 0 });
    restored.importState({ lsn, keys: entries }, 0);
    expect(restored.state('k4')).toEqual({ count: 1, events: ['e4'] });
    expect(restored.timerOf('k4')).toBe(104);
  });

  it('refuses a record applied twice or out of order', () => {
    const core = new ShardCore(rules, { nowMs: 0 });
    core.apply(1, { key: 'a', at: 1, type: 'event' });
    expect(() => core.apply(1, { key: 'a', at: 1, type: 'event' })).toThrow(/apply once, in order/);
  });

  it('names due timers in bounded chunks, oldest first, and retires keys with nothing left', () => {
    const core = new ShardCore(rules, { nowMs: 0, tickMs: 10, horizonMs: 1_000 });
    for (let i = 0; i < 250; i++) core.apply(i + 1, { key: `k${i}`, at: i, type: 'event', data: `e${i}` });
    expect(core.due(99, 100)).toEqual([]); // the first is due at 100
    const first = core.due(400, 100);
    expect(first).toHaveLength(100);
    expect(first.slice(0, 10).every((k) => Number(k.slice(1)) < 10)).toBe(true); // oldest buckets first
    let lsn = 250;
    for (const key of first) core.apply(++lsn, { key, at: 400, type: TIMER });
    expect(core.state(first[0]!)).toBeUndefined(); // retired: no count, no timer
    const rest = [...core.due(400, 1_000)];
    expect(rest).toHaveLength(150);
    expect(new Set([...first, ...rest]).size).toBe(250);
  });

  it('keeps timers beyond the horizon outside the wheel until they come within it', () => {
    const farRules: Rules<{ at: number }, string> = {
      initial: () => ({ at: 0 }),
      apply: (s, r, fx) =>
        r.type === TIMER ? (fx.output(r.key), { at: 0 }) : (fx.timer(r.at + 10 * 60_000), { at: r.at }),
      retired: (s) => s.at === 0,
    };
    const core = new ShardCore(farRules, { nowMs: 0, tickMs: 10, horizonMs: 60_000 });
    core.apply(1, { key: 'late', at: 0, type: 'event' });
    expect(core.due(9 * 60_000, 10)).toEqual([]);
    expect(core.due(10 * 60_000, 10)).toEqual(['late']);
  });

  it('drops a cancelled or moved timer', () => {
    const core = new ShardCore(rules, { nowMs: 0, tickMs: 10, horizonMs: 1_000 });
    core.apply(1, { key: 'a', at: 0, type: 'event' }); // timer at 100
    core.apply(2, { key: 'a', at: 50, type: 'event' }); // moved to 150
    expect(core.due(120, 10)).toEqual([]);
    expect(core.due(150, 10)).toEqual(['a']);
  });
});

describe('ShardCore.due up to a time gone by', () => {
  it('hands out a timer set overdue after the wheel moved on, when asked up to a time before the wheel’s bucket', () => {
    const core = new ShardCore(rules, { nowMs: 0, tickMs: 1_000 });
    core.apply(1, { key: 'b', at: 5_000, type: 'event', data: 'x' });
    expect(core.due(5_500, 10)).toEqual(['b']); // the wheel's cursor moves to the bucket of 5,500
    core.apply(2, { key: 'b', at: 5_500, type: TIMER, data: null });
    core.apply(3, { key: 'a', at: 1_000, type: 'event', data: 'y' }); // its timer at 1,100: overdue
    expect(core.nextDueMs(5_500)).toBe(1_100);
    expect(core.due(1_099, 10)).toEqual([]);
    expect(core.due(1_100, 10)).toEqual(['a']); // as a host whose timers wait for its input asks
  });
});
