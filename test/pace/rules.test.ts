import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_DEDUP_MS, type CompiledPace } from '../../src/pace/config.js';
import {
  coordinatorKey,
  DONE,
  EVENT,
  opensRun,
  paceRules,
  type PaceOutput,
  type PaceRun,
  type PaceState,
} from '../../src/pace/rules.js';
import { paceCodec } from '../../src/pace/codec.js';
import { QUIET } from '../../src/pace/state.js';
import { TIMER, type ShardRecord } from '../../src/shard/rules.js';
import { ShardCore } from '../../src/shard/shard-core.js';
import { paceCore } from './core.js';
import { PaceModel } from './model.js';

const DEBOUNCE: CompiledPace = { kind: 'debounce', windowMs: 100, maxWaitMs: 300, dedupMs: 1000 };
const BATCH: CompiledPace = { kind: 'batch', max: 3, waitMs: 100, dedupMs: 1000 };
const paces = new Map<string, CompiledPace>([
  ['d', DEBOUNCE],
  ['b', BATCH],
]);

/** These paces have no drop: every output is a run. */
const core = () => {
  const k = paceCore(paces);
  return { ...k, released: () => k.released() as PaceRun[] };
};
const ev = (sub: string, key: string, at: number, e: unknown, r: string, id?: string): ShardRecord => ({
  key: coordinatorKey(sub, key),
  at,
  type: EVENT,
  data: id === undefined ? { e, r } : { e, r, id },
});

describe('pace rules', () => {
  it('closes a window with an event exactly at its end, before the timer record: the event opens the next window', () => {
    const { c, apply, released } = core();
    expect(apply(ev('d', 'k', 0, 'first', 'u1'))).toEqual({ kind: 'run', runId: 'k@u1', duplicate: false });
    expect(c.timerOf(coordinatorKey('d', 'k'))).toBe(100);
    expect(apply(ev('d', 'k', 100, 'second', 'u2'))).toEqual({ kind: 'run', runId: 'k@u2', duplicate: false });
    expect(released()).toEqual([
      { subscriber: 'd', key: 'k', id: 'k@u1', events: ['first'], size: 1, startedAt: 100, order: 0 },
    ]);
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
    expect(c.state(key)).toEqual({ ...QUIET, ids: { 'id-1': 'k@u1' }, idOrder: ['id-1'], idUntil: [1000], idHead: 0 });
    expect(c.timerOf(key)).toBe(1000);
    apply({ key, at: 1000, type: TIMER });
    expect(c.keyCount).toBe(0);
  });

  it('keeps a run that started until its done record, whatever else happens to the key', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('b', 'k');
    for (const e of [1, 2, 3, 4]) apply(ev('b', 'k', 0, e, `u${e}`));
    expect(released()).toEqual([
      { subscriber: 'b', key: 'k', id: 'k@u1', events: [1, 2, 3], size: 3, startedAt: 0, order: 0 },
    ]);
    expect(c.state(key)!.running).toEqual([{ runId: 'k@u1', events: [1, 2, 3], size: 3, order: 0, startedAt: 0 }]);
    expect(c.state(key)).toMatchObject({ stage: 'gathering', window: { runId: 'k@u4', events: [4] } });
    apply({ key, at: 10, type: DONE, data: 'k@u1' });
    expect(c.state(key)!.running).toEqual([]);
  });

  it('answers a redelivered broker message (an offset not past the last of its partition) as a duplicate of the latest run, until dedup after the last delivery', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('b', 'k');
    const msg = (at: number, off: number, src = 'orders/0'): ShardRecord => ({
      key,
      at,
      type: EVENT,
      data: { e: `${src}@${off}`, r: `u${at}`, src, off },
    });
    expect(apply(msg(0, 5))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: false });
    expect(apply(msg(10, 5))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: true }); // the same offset again
    expect(apply(msg(20, 3))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: true }); // an earlier one
    expect(apply(msg(30, 3, 'orders/1'))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: false }); // another partition's offsets are its own
    expect(apply(msg(40, 6))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: false });
    expect(released()).toEqual([
      {
        subscriber: 'b',
        key: 'k',
        id: 'k@u0',
        events: ['orders/0@5', 'orders/1@3', 'orders/0@6'],
        size: 3,
        startedAt: 40,
        order: 0,
      },
    ]);
    // The batch ran: a redelivery is a duplicate of the run it most likely joined, the latest.
    expect(apply(msg(50, 6))).toEqual({ kind: 'run', runId: 'k@u0', duplicate: true });
    expect(apply(msg(60, 7))).toEqual({ kind: 'run', runId: 'k@u60', duplicate: false });
    expect(apply(msg(70, 4))).toEqual({ kind: 'run', runId: 'k@u60', duplicate: true });
    apply({ key, at: 160, type: TIMER });
    apply({ key, at: 170, type: DONE, data: 'k@u0' });
    apply({ key, at: 180, type: DONE, data: 'k@u60' });
    expect(released()).toHaveLength(1);
    // The offsets are kept `dedup` (1 s) after the last delivery, then forgotten all at once, and the key retires.
    expect(c.timerOf(key)).toBe(1060);
    expect(apply(msg(1059, 7))).toEqual({ kind: 'run', runId: '', duplicate: true });
    apply({ key, at: 1060, type: TIMER });
    expect(c.keyCount).toBe(0);
    expect(apply(msg(1070, 7))).toEqual({ kind: 'run', runId: 'k@u1070', duplicate: false });
  });

  it('keeps the rest of a key when its remembered IDs age out', () => {
    const { c, apply, released } = core();
    const key = coordinatorKey('d', 'k');
    apply(ev('d', 'k', 0, 'a', 'u1', 'id-1'));
    apply({ key, at: 100, type: TIMER });
    expect(released()).toHaveLength(1);
    apply(ev('d', 'k', 950, 'b', 'u2'));
    expect(c.timerOf(key)).toBe(1000);
    apply({ key, at: 1000, type: TIMER }); // id-1 ages out; the run and the window stay
    expect(c.state(key)).toEqual({
      stage: 'gathering',
      window: { runId: 'k@u2', openedAt: 950, closesAt: 1050, events: ['b'], size: 1, order: 0 },
      waiting: [],
      running: [{ runId: 'k@u1', events: ['a'], size: 1, order: 0, startedAt: 100 }],
      history: [],
    });
    expect(c.timerOf(key)).toBe(1050);
    // The ID is new again: it joins the window, which it moves on.
    expect(apply(ev('d', 'k', 1001, 'c', 'u3', 'id-1'))).toEqual({ kind: 'run', runId: 'k@u2', duplicate: false });
    expect(c.timerOf(key)).toBe(1101);
    apply({ key, at: 1101, type: TIMER });
    expect(released()).toEqual([
      { subscriber: 'd', key: 'k', id: 'k@u2', events: ['c'], size: 2, startedAt: 1101, order: 0 },
    ]);
  });

  it('moves a coordinator whose subscriber is no longer mounted on: waiting starts start, windows close when due, new IDs kept the default time', () => {
    const rated = new Map<string, CompiledPace>([
      ['q', { kind: 'batch', max: 2, waitMs: 100, dedupMs: 1000, rate: { max: 1, perMs: 500, drop: false } }],
    ]);
    const first = paceCore(rated);
    const key = coordinatorKey('q', 'k');
    for (const [i, at] of [
      [1, 0],
      [2, 0],
      [3, 1],
      [4, 1],
    ] as const)
      first.apply(ev('q', 'k', at, i, `u${i}`));
    first.apply(ev('q', 'k', 2, 5, 'u5', 'x'));
    expect(first.released()).toEqual([expect.objectContaining({ id: 'k@u1' })]);
    const saved = first.c.state(key)!;
    expect(saved).toMatchObject({
      waiting: [{ runId: 'k@u3' }],
      stage: 'gathering',
      window: { runId: 'k@u5', closesAt: 102 },
      history: [0],
    });
    // The next life mounts no subscriber `q`.
    const next = new ShardCore<PaceState, PaceOutput>(paceRules(new Map()), { nowMs: 3 });
    const json = JSON.parse(JSON.stringify(paceCodec.encode(saved))) as PaceState; // as a snapshot keeps it
    next.importState({ lsn: 10, keys: [[key, json, first.c.timerOf(key) ?? null]] }, 3);
    next.apply(11, { key, at: 3, type: TIMER });
    expect(next.release(11)).toEqual([
      { subscriber: 'q', key: 'k', id: 'k@u3', events: [3, 4], size: 2, startedAt: 3, order: 0 },
    ]);
    expect(next.state(key)!.history).toEqual([]); // no rate holds anything back any more
    expect(next.apply(12, { key, at: 4, type: EVENT, data: { e: 6, r: 'u6', id: 'y' } })).toEqual({
      kind: 'run',
      runId: 'k@u5',
      duplicate: false,
    });
    expect(next.timerOf(key)).toBe(102);
    next.apply(13, { key, at: 102, type: TIMER });
    expect(next.release(13)).toEqual([
      { subscriber: 'q', key: 'k', id: 'k@u5', events: [5, 6], size: 2, startedAt: 102, order: 0 },
    ]);
    // A new window closes on its first record: it waits no time.
    expect(next.apply(14, { key, at: 103, type: EVENT, data: { e: 7, r: 'u7' } })).toEqual({
      kind: 'run',
      runId: 'k@u7',
      duplicate: false,
    });
    expect(next.timerOf(key)).toBe(103);
    next.apply(15, { key, at: 103, type: TIMER });
    expect(next.release(15)).toEqual([expect.objectContaining({ id: 'k@u7', events: [7], startedAt: 103 })]);
    // `x` is forgotten when the first life said, `y` the default time after it came.
    expect(next.timerOf(key)).toBe(1002);
    next.apply(16, { key, at: 1002, type: TIMER });
    expect(next.timerOf(key)).toBe(4 + DEFAULT_DEDUP_MS);
  });

  it('names a run by the UUID of the event that opens it: an event that joins an open window adds to it, its own UUID unused', () => {
    const { apply } = core();
    const receipt = (runId: string) => ({ kind: 'run', runId, duplicate: false });
    expect(apply(ev('d', 'k', 0, 1, 'u1'))).toEqual(receipt('k@u1'));
    expect(apply(ev('d', 'k', 99, 2, 'u2'))).toEqual(receipt('k@u1'));
    expect(apply(ev('d', 'k', 199, 3, 'u3'))).toEqual(receipt('k@u3')); // the window closed first, at 99 + 100
    expect(apply(ev('b', 'k', 0, 1, 'v1'))).toEqual(receipt('k@v1'));
    expect(apply(ev('b', 'k', 99, 2, 'v2'))).toEqual(receipt('k@v1'));
    expect(apply(ev('b', 'k', 100, 3, 'v3'))).toEqual(receipt('k@v3'));
  });

  it('opensRun: an event opens a run unless it joins a window still open at its time', () => {
    const window = { runId: 'k@u1', openedAt: 0, closesAt: 100, events: [1], size: 1, order: 0 };
    const gathering: PaceState = { ...QUIET, stage: 'gathering', window };
    expect(opensRun(undefined, DEBOUNCE, 0)).toBe(true);
    expect(opensRun(QUIET, BATCH, 0)).toBe(true);
    expect(opensRun(gathering, DEBOUNCE, 99)).toBe(false);
    expect(opensRun(gathering, BATCH, 99)).toBe(false);
    expect(opensRun(gathering, DEBOUNCE, 100)).toBe(true); // the window closes first
    // Without gathering every event is a run, even beside a window left by an earlier life's settings.
    expect(opensRun(gathering, { kind: 'each', dedupMs: 1000 }, 50)).toBe(true);
  });

  it("rebuilds by replay exactly the state and outputs that live application built, which are the model's, over runs of up to 60 records (property)", () => {
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
          else r = { key, at, type: DONE, data: live.c.state(key)?.running[0]?.runId ?? 'none' };
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
          if (o.subscriber === 'b')
            for (const e of o.events) {
              expect(seen.has(e) ? e : undefined).toBeUndefined();
              seen.add(e);
            }
        }
      }),
      { numRuns: 300 },
    );
    // Runs reached the length the name claims, and some outlived the remembered IDs.
    expect(longest).toBeGreaterThanOrEqual(55);
    expect(agedOut).toBeGreaterThanOrEqual(10);
  });
});
