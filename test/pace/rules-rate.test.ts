import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompiledPace } from '../../src/pace/config.js';
import { coordinatorKey, DONE, EVENT, type PaceOutput, type PaceRun, type Receipt } from '../../src/pace/rules.js';
import { TIMER, type ShardRecord } from '../../src/shard/rules.js';
import { paceCore } from './core.js';
import { PaceModel } from './model.js';

// Rates with short periods: the rules take any period (`perMinute` is a rate of 60 s).
const paces = new Map<string, CompiledPace>([
  ['p', { kind: 'each', dedupMs: 1000, rate: { max: 2, perMs: 300, drop: false } }],
  ['x', { kind: 'debounce', windowMs: 50, maxWaitMs: 100, dedupMs: 1000, rate: { max: 1, perMs: 400, drop: true } }],
  ['q', { kind: 'batch', max: 3, waitMs: 100, dedupMs: 1000, rate: { max: 1, perMs: 200, drop: false } }],
  ['e', { kind: 'each', dedupMs: 1000, rate: { max: 2, perMs: 300, drop: true } }],
]);

const core = () => paceCore(paces);
const ev = (
  sub: string,
  key: string,
  at: number,
  e: unknown,
  r: string,
  extra: { id?: string; o?: number } = {},
): ShardRecord => ({ key: coordinatorKey(sub, key), at, type: EVENT, data: { e, r, ...extra } });
const timer = (sub: string, key: string, at: number): ShardRecord => ({
  key: coordinatorKey(sub, key),
  at,
  type: TIMER,
});
const runs = (outs: PaceOutput[]) =>
  outs.filter((o): o is PaceRun => !('dropped' in o)).map((o) => [o.events, o.startedAt]);

describe('pace rules: rates', () => {
  it('perMinute: starts over the rate wait in the state, and a timer record starts each when the period allows', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('p', 'k');
    for (const [i, at] of [
      [1, 0],
      [2, 10],
      [3, 20],
      [4, 30],
    ] as const)
      expect(apply(ev('p', 'k', at, i, `u${i}`))).toEqual({ kind: 'run', runId: `k@u${i}`, duplicate: false });
    expect(runs(released())).toEqual([
      [[1], 0],
      [[2], 10],
    ]);
    expect(c.state(key)!.waiting.map((s) => s.events)).toEqual([[3], [4]]);
    expect(c.timerOf(key)).toBe(300); // the first start ages out of the period
    apply(timer('p', 'k', 300));
    expect(runs(released())).toEqual([[[3], 300]]);
    expect(c.timerOf(key)).toBe(310);
    // The key's next record moves a waiting start on in its own write, before the timer record.
    apply(ev('p', 'k', 315, 5, 'u5'));
    expect(runs(released())).toEqual([[[4], 315]]);
    expect(c.state(key)!.waiting.map((s) => s.events)).toEqual([[5]]);
    expect(c.timerOf(key)).toBe(600);
  });

  it('perMinute: the waiting start of highest order goes first, equal orders in the order they came', () => {
    const { c, apply, released } = core();
    apply(ev('p', 'k', 0, 'a', 'ua'));
    apply(ev('p', 'k', 0, 'b', 'ub'));
    for (const [e, o] of [
      ['low', -1],
      ['mid1', 0],
      ['high', 5],
      ['mid2', 0],
      ['top', 9],
    ] as const)
      apply(ev('p', 'k', 1, e, `u-${e}`, { o }));
    expect(c.state(coordinatorKey('p', 'k'))!.waiting.map((s) => s.events[0])).toEqual([
      'top',
      'high',
      'mid1',
      'mid2',
      'low',
    ]);
    released();
    apply(timer('p', 'k', 300));
    apply(timer('p', 'k', 600));
    apply(timer('p', 'k', 900));
    expect(runs(released()).map(([e]) => (e as string[])[0])).toEqual(['top', 'high', 'mid1', 'mid2', 'low']);
  });

  it('batch then perMinute: a closed window waits as one start, with the highest order of its events', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('q', 'k');
    for (let i = 1; i <= 6; i++) apply(ev('q', 'k', i, i, `u${i}`, { o: i === 5 ? 7 : 0 }));
    expect(runs(released())).toEqual([[[1, 2, 3], 3]]); // the first batch ran; the second (with order 7) waits
    expect(c.state(key)!.waiting).toEqual([{ runId: 'k@u4', events: [4, 5, 6], size: 3, order: 7 }]);
    apply(timer('q', 'k', 203));
    expect(released()).toEqual([
      { subscriber: 'q', key: 'k', id: 'k@u4', events: [4, 5, 6], size: 3, startedAt: 203, order: 7 },
    ]);
  });

  it('batch: a window takes the highest order of its starts, a start without an order counting as 0', () => {
    const { apply, released } = core();
    for (const [i, o] of [
      [1, -1],
      [2, 0],
      [3, -2],
    ] as const)
      apply(ev('q', 'k', 0, i, `u${i}`, { o }));
    expect(released()).toEqual([
      { subscriber: 'q', key: 'k', id: 'k@u1', events: [1, 2, 3], size: 3, startedAt: 0, order: 0 },
    ]);
    for (const [i, o] of [
      [4, -2],
      [5, -1],
      [6, -3],
    ] as const)
      apply(ev('q', 'k', 1, i, `u${i}`, { o }));
    apply(timer('q', 'k', 200));
    expect(released()).toEqual([
      { subscriber: 'q', key: 'k', id: 'k@u4', events: [4, 5, 6], size: 3, startedAt: 200, order: -1 },
    ]);
  });

  it('drop: a start over the rate is answered dropped, put out for the log, and a repeated ID stays dropped', () => {
    const { c, apply, released } = core();
    expect(apply(ev('e', 'k', 0, 1, 'u1'))).toEqual({ kind: 'run', runId: 'k@u1', duplicate: false });
    expect(apply(ev('e', 'k', 1, 2, 'u2'))).toEqual({ kind: 'run', runId: 'k@u2', duplicate: false });
    expect(apply(ev('e', 'k', 2, 3, 'u3', { id: 'x' }))).toEqual({ kind: 'dropped', dropped: true });
    expect(apply(ev('e', 'k', 3, 3, 'u4', { id: 'x' }))).toEqual({ kind: 'dropped', dropped: true });
    expect(released()).toEqual([
      expect.objectContaining({ id: 'k@u1' }),
      expect.objectContaining({ id: 'k@u2' }),
      { subscriber: 'e', key: 'k', dropped: true, at: 2, eventId: 'x' },
    ]);
    expect(apply(ev('e', 'k', 300, 4, 'u5'))).toEqual({ kind: 'run', runId: 'k@u5', duplicate: false }); // the first start aged out
    expect(c.state(coordinatorKey('e', 'k'))!.waiting).toEqual([]);
  });

  it('debounce then drop: starts join an open window; one that would open a window over the rate is dropped', () => {
    const { apply, released } = core();
    const first = apply(ev('x', 'k', 0, 1, 'u1'));
    expect(apply(ev('x', 'k', 20, 2, ''))).toEqual(first);
    apply(timer('x', 'k', 70));
    expect(runs(released())).toEqual([[[2], 70]]);
    expect(apply(ev('x', 'k', 100, 3, 'u3'))).toEqual({ kind: 'dropped', dropped: true });
    expect(apply(ev('x', 'k', 470, 4, 'u4'))).toEqual({ kind: 'run', runId: 'k@u4', duplicate: false });
  });

  it('retires a coordinator once its rate history aged out', () => {
    const { c, apply } = core();
    const key = coordinatorKey('p', 'k');
    apply(ev('p', 'k', 0, 1, 'u1'));
    apply({ key, at: 5, type: DONE, data: 'k@u1' });
    expect(c.timerOf(key)).toBe(300);
    apply(timer('p', 'k', 300));
    expect(c.keyCount).toBe(0);
  });

  it('keeps its rates, replays exactly, loses no start and does as the model does, over runs of up to 80 records (property)', () => {
    const step = fc.record({
      sub: fc.constantFrom('p', 'x', 'q', 'e'),
      key: fc.constantFrom('a', 'b'),
      dt: fc.integer({ min: 0, max: 120 }),
      kind: fc.constantFrom('event', 'event', 'event', 'timer', 'done'),
      id: fc.option(fc.constantFrom('i', 'j', 'k'), { nil: undefined }),
      o: fc.integer({ min: -2, max: 2 }),
    });
    let longest = 0;
    let waited = 0;
    let dropped = 0;
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80, size: 'max' }), (steps) => {
        longest = Math.max(longest, steps.length);
        const live = core();
        const model = new PaceModel(paces);
        const records: ShardRecord[] = [];
        const outputs: PaceOutput[] = [];
        const applied = (r: ShardRecord) => {
          records.push(r);
          const reply = live.apply(r);
          const expected = model.applyRecord(r);
          expect(reply).toEqual(expected.reply);
          const out = live.released();
          expect(out).toEqual(expected.out);
          outputs.push(...out);
          if ((live.c.state(r.key)?.waiting.length ?? 0) > 0) waited++;
          return reply;
        };
        const droppedEvents = new Set<number>();
        let at = 0;
        let n = 0;
        for (const s of steps) {
          at += s.dt;
          const key = coordinatorKey(s.sub, s.key);
          let r: ShardRecord;
          if (s.kind === 'event')
            r = ev(s.sub, s.key, at, n, `u${n}`, { o: s.o, ...(s.id === undefined ? {} : { id: s.id }) });
          else if (s.kind === 'timer') r = timer(s.sub, s.key, at);
          else r = { key, at, type: DONE, data: live.c.state(key)?.running[0]?.runId ?? 'none' };
          const reply = applied(r);
          if (s.kind === 'event' && (reply as Receipt).kind === 'dropped') droppedEvents.add(n);
          if (s.kind === 'event') n++;
          // Due timers fire, as a host would.
          for (const k of live.c.due(at, 100)) applied({ key: k, at, type: TIMER });
        }
        const replayed = core();
        for (const r of records) replayed.apply(JSON.parse(JSON.stringify(r)) as ShardRecord);
        for (const k of live.c.keys()) expect(replayed.c.state(k)).toEqual(live.c.state(k));
        expect(replayed.released()).toEqual(outputs);
        // No more than `max` runs of a key start in any period.
        const started = outputs.filter((o): o is PaceRun => !('dropped' in o));
        for (const [sub, pace] of paces) {
          for (const key of ['a', 'b']) {
            const times = started.filter((o) => o.subscriber === sub && o.key === key).map((o) => o.startedAt);
            for (let i = 0; i + pace.rate!.max < times.length; i++)
              expect(times[i + pace.rate!.max]! - times[i]!).toBeGreaterThanOrEqual(pace.rate!.perMs);
          }
        }
        // Of the `each` and batch subscribers, every start not dropped nor a duplicate ran or still waits, once.
        const inRuns = started.filter((o) => o.subscriber !== 'x').flatMap((o) => o.events as number[]);
        expect(new Set(inRuns).size).toBe(inRuns.length);
        for (const o of started.filter((o) => o.subscriber !== 'x'))
          for (const e of o.events as number[]) expect(droppedEvents.has(e)).toBe(false);
        dropped += droppedEvents.size;
      }),
      { numRuns: 300 },
    );
    // Runs reached the length the name claims, starts waited for their rate and were dropped over it.
    expect(longest).toBeGreaterThanOrEqual(75);
    expect(waited).toBeGreaterThanOrEqual(30);
    expect(dropped).toBeGreaterThanOrEqual(50);
  });
});
