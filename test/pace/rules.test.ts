import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompiledPace } from '../../src/pace/config.js';
import { coordinatorKey, DONE, EVENT, type PaceRun } from '../../src/pace/rules.js';
import { TIMER, type ShardRecord } from '../../src/shard/rules.js';
import { paceCore } from './core.js';
import { PaceModel } from './model.js';

const DEBOUNCE: CompiledPace = { kind: 'debounce', windowMs: 100, maxWaitMs: 300, dedupMs: 1000 };
const BATCH: CompiledPace = { kind: 'batch', max: 3, waitMs: 100, dedupMs: 1000 };
const paces = new Map<string, CompiledPace>([['d', DEBOUNCE], ['b', BATCH]]);

/** These paces have no drop: every output is a run. */
const core = () => {
  const k = paceCore(paces);
  return { ...k, released: () => k.released() as PaceRun[] };
};
const ev = (sub: string, key: string, at: number, e: unknown, r: string, id?: string): ShardRecord => ({ key: coordinatorKey(sub, key), at, type: EVENT, data: id === undefined ? { e, r } : { e, r, id } });

describe('pace rules', () => {
  it('closes a window with an event exactly at its end, before the timer record: the event opens the next window', () => {
    const { c, apply, released } = core();
    expect(apply(ev('d', 'k', 0, 'first', 'u1'))).toEqual({ runId: 'k@u1', duplicate: false });
    expect(c.timerOf(coordinatorKey('d', 'k'))).toBe(100);
    expect(apply(ev('d', 'k', 100, 'second', 'u2'))).toEqual({ runId: 'k@u2', duplicate: false });
    expect(released()).toEqual([{ subscriber: 'd', key: 'k', id: 'k@u1', events: ['first'], size: 1, startedAt: 100, order: 0 }]);
    // The timer record that comes late finds the new window not yet due: nothing runs.
    apply({ key: coordinatorKey('d', 'k'), at: 100, type: TIMER });
    expect(released()).toEqual([]);
    expect(c.timerOf(coordinatorKey('d', 'k'))).toBe(200);
  });

  it('retires a coordinator once its run is done and its remembered IDs aged out', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('b', 'k');
    apply(ev('b', 'k', 0, 1, 'u1', 'id-1'));
    apply({ key, at: 100, type: TIMER });
    expect(released()).toHaveLength(1);
    apply({ key, at: 150, type: DONE, data: 'k@u1' });
    expect(c.state(key)).toEqual({ ids: { 'id-1': 'k@u1' }, idOrder: ['id-1'], idUntil: [1000], idHead: 0 });
    expect(c.timerOf(key)).toBe(1000);
    apply({ key, at: 1000, type: TIMER });
    expect(c.keyCount).toBe(0);
  });

  it('keeps a run that started until its done record, whatever else happens to the key', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('b', 'k');
    for (const e of [1, 2, 3, 4]) apply(ev('b', 'k', 0, e, `u${e}`));
    expect(released()).toEqual([{ subscriber: 'b', key: 'k', id: 'k@u1', events: [1, 2, 3], size: 3, startedAt: 0, order: 0 }]);
    expect(c.state(key)!.runs).toEqual([{ id: 'k@u1', events: [1, 2, 3], size: 3, at: 0 }]);
    expect(c.state(key)!.w).toMatchObject({ id: 'k@u4', events: [4] });
    apply({ key, at: 10, type: DONE, data: 'k@u1' });
    expect(c.state(key)!.runs).toBeUndefined();
  });

  it('rebuilds by replay exactly the state and outputs that live application built, which are the model\'s, over runs of up to 60 records (property)', () => {
    const record = fc.record({
      sub: fc.constantFrom('d', 'b'),
      key: fc.constantFrom('a', 'b', 'c'),
      dt: fc.integer({ min: 0, max: 150 }),
      kind: fc.constantFrom('event', 'event', 'event', 'timer', 'done'),
      id: fc.option(fc.constantFrom('x', 'y', 'z'), { nil: undefined }),
    });
    let longest = 0;
    let agedOut = 0;
    fc.assert(
      fc.property(fc.array(record, { maxLength: 60, size: 'max' }), (steps) => {
        longest = Math.max(longest, steps.length);
        const live = core();
        const model = new PaceModel(paces);
        const records: ShardRecord[] = [];
        let at = 0;
        let n = 0;
        const outputs: PaceRun[] = [];
        for (const s of steps) {
          at += s.dt;
          const key = coordinatorKey(s.sub, s.key);
          let r: ShardRecord;
          if (s.kind === 'event') r = ev(s.sub, s.key, at, n, `u${n++}`, s.id);
          else if (s.kind === 'timer') r = { key, at, type: TIMER };
          else r = { key, at, type: DONE, data: live.c.state(key)?.runs?.[0]?.id ?? 'none' };
          records.push(r);
          const reply = live.apply(r);
          const expected = model.applyRecord(r);
          expect(reply).toEqual(expected.reply);
          const out = live.released();
          expect(out).toEqual(expected.out);
          outputs.push(...out);
        }
        if (at > DEBOUNCE.dedupMs) agedOut++;
        const replayed = core();
        for (const r of records) replayed.apply(JSON.parse(JSON.stringify(r)) as ShardRecord);
        const keys = [...live.c.keys()].sort();
        expect([...replayed.c.keys()].sort()).toEqual(keys);
        for (const k of keys) {
          expect(replayed.c.state(k)).toEqual(live.c.state(k));
          expect(replayed.c.timerOf(k)).toEqual(live.c.timerOf(k));
        }
        expect(replayed.released()).toEqual(outputs);
        // Every event is in at most one run, and no run is empty.
        const seen = new Set<unknown>();
        for (const o of outputs) {
          expect(o.size).toBeGreaterThan(0);
          if (o.subscriber === 'b') for (const e of o.events) expect(seen.has(e) ? e : undefined).toBeUndefined(), seen.add(e);
        }
      }),
      { numRuns: 300 },
    );
    // Runs reached the length the name claims, and some outlived the remembered IDs.
    expect(longest).toBeGreaterThanOrEqual(55);
    expect(agedOut).toBeGreaterThanOrEqual(10);
  });
});
