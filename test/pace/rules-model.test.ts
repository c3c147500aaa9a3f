import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompiledPace } from '../../src/pace/config.js';
import { coordinatorKey, DONE, EVENT, type Receipt } from '../../src/pace/rules.js';
import { TIMER, type ShardRecord } from '../../src/shard/rules.js';
import { paceCore } from './core.js';
import { PaceModel, type ModelEventData, type ModelRecord } from './model.js';

// Every kind of gathering, alone and with each kind of rate; short periods (the rules take any).
const paces = new Map<string, CompiledPace>([
  ['d', { kind: 'debounce', windowMs: 100, maxWaitMs: 300, dedupMs: 1000 }],
  ['n', { kind: 'debounce', windowMs: 80, maxWaitMs: undefined, dedupMs: 500 }],
  ['b', { kind: 'batch', max: 3, waitMs: 100, dedupMs: 1000 }],
  ['p', { kind: 'each', dedupMs: 1000, rate: { max: 2, perMs: 300, drop: false } }],
  ['x', { kind: 'debounce', windowMs: 50, maxWaitMs: 100, dedupMs: 1000, rate: { max: 1, perMs: 400, drop: true } }],
  ['q', { kind: 'batch', max: 3, waitMs: 100, dedupMs: 700, rate: { max: 1, perMs: 200, drop: false } }],
  ['e', { kind: 'each', dedupMs: 1000, rate: { max: 2, perMs: 300, drop: true } }],
  ['y', { kind: 'batch', max: 4, waitMs: 60, dedupMs: 600, rate: { max: 2, perMs: 250, drop: true } }],
]);
const SUBS = [...paces.keys()];
const SOURCES = ['orders/0', 'orders/1'];

const step = fc.record({
  sub: fc.constantFrom(...SUBS),
  key: fc.constantFrom('a', 'b'),
  // Small steps, and the lengths of the windows and periods, so that records land on their boundaries.
  dt: fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 40 }), weight: 4 },
    { arbitrary: fc.constantFrom(0, 1, 50, 100, 200, 300, 400), weight: 1 },
  ),
  kind: fc.constantFrom('event', 'event', 'event', 'event', 'timer', 'done'),
  // An event is sent with an ID, sent without one, or delivered by the broker (a new offset, or one redelivered).
  from: fc.constantFrom('id', 'id', 'none', 'broker'),
  id: fc.constantFrom('i', 'j', 'k', 'l'),
  src: fc.constantFrom(...SOURCES),
  back: fc.constantFrom(0, 0, 0, 1, 2),
  o: fc.integer({ min: -2, max: 2 }),
  run: fc.nat(3),
  // The host fires due timers before the record (as it does), or the record comes first (a host running late).
  late: fc.boolean(),
});

describe('pace rules against a model', () => {
  /** How far the runs went, for the assertions after each property. */
  const reached = {
    longRuns: 0,
    idsAgedWhileHolding: 0,
    redelivered: 0,
    duplicates: 0,
    dropped: 0,
    waited: 0,
    retired: 0,
  };
  let longest = 0;

  it('answer, put out, wake and retire keys as the model does, over runs of up to 150 records (property)', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 150, size: 'max' }), (steps) => {
        const { c, apply, released } = paceCore(paces);
        const model = new PaceModel(paces);
        const lastOffset = new Map<string, number>();
        const got: unknown[] = [];
        const want: unknown[] = [];
        let at = 0;
        let n = 0;
        const feed = (sub: string, key: string, t: number, record: ModelRecord): void => {
          const k = coordinatorKey(sub, key);
          const heldIds = c.state(k)?.idOrder !== undefined;
          const r: ShardRecord =
            record.type === 'event'
              ? { key: k, at: t, type: EVENT, data: record.data }
              : record.type === 'done'
                ? { key: k, at: t, type: DONE, data: record.run }
                : { key: k, at: t, type: TIMER };
          const reply = apply(r) as Receipt | undefined;
          const expected = model.apply(sub, key, t, record);
          // What each answered, put out, set its timer to and whether it holds the key, after this record.
          got.push([r, reply, released(), c.timerOf(k), c.state(k) !== undefined]);
          want.push([r, expected.reply, expected.out, model.timer(sub, key, t), model.holds(sub, key, t)]);
          if (heldIds && c.state(k)?.idOrder === undefined && c.state(k) !== undefined) reached.idsAgedWhileHolding++;
          if (c.state(k) === undefined) reached.retired++;
          if (reply?.kind === 'run' && reply.duplicate) reached.duplicates++;
          if (reply?.kind === 'dropped') reached.dropped++;
          if ((c.state(k)?.waiting.length ?? 0) > 0) reached.waited++;
        };
        for (const s of steps) {
          at += s.dt;
          if (!s.late) {
            // Every timer due by now fires, at its time (or at the last record's, should that be later), earliest first.
            for (;;) {
              let next: [string, number] | undefined;
              for (const k of c.keys()) {
                const t = c.timerOf(k);
                if (t !== undefined && t <= at && (next === undefined || t < next[1])) next = [k, t];
              }
              if (next === undefined) break;
              const [sub, key] = next[0].split('\u0000') as [string, string];
              feed(sub, key, Math.max(next[1], c.time ?? 0), { type: 'timer' });
            }
          }
          if (s.kind === 'timer') feed(s.sub, s.key, at, { type: 'timer' });
          else if (s.kind === 'done')
            feed(s.sub, s.key, at, { type: 'done', run: model.running(s.sub, s.key)[s.run] ?? 'no-such-run' });
          else {
            let data: ModelEventData = { e: n, r: `u${n}`, ...(s.o !== 0 ? { o: s.o } : {}) };
            if (s.from === 'id') data = { ...data, id: s.id };
            else if (s.from === 'broker') {
              const last = lastOffset.get(s.src) ?? -1;
              const off = s.back === 0 ? last + 1 : Math.max(0, last + 1 - s.back);
              if (off <= last) reached.redelivered++;
              lastOffset.set(s.src, Math.max(last, off));
              data = { ...data, src: s.src, off };
            }
            n++;
            feed(s.sub, s.key, at, { type: 'event', data });
          }
        }
        expect(got).toEqual(want);
        longest = Math.max(longest, steps.length);
        if (steps.length >= 120) reached.longRuns++;
      }),
      { numRuns: 100 },
    );
    // The runs reached the lengths the name claims (fast-check spreads them evenly up to 150), and what the
    // model is there to check happened in them: IDs aged out of keys that kept the rest of their state,
    // broker redeliveries, duplicates, drops, starts waiting for their rate, keys retired.
    expect(longest).toBeGreaterThanOrEqual(130);
    for (const [what, count] of Object.entries(reached)) expect([what, count >= 5]).toEqual([what, true]);
  });
});
