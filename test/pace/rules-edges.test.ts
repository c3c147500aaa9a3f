import { describe, expect, it } from 'vitest';
import { MAX_BATCH, type CompiledPace } from '../../src/pace/config.js';
import { paceCodec } from '../../src/pace/codec.js';
import { coordinatorKey, EVENT, paceRules, type PaceOutput, type PaceState } from '../../src/pace/rules.js';
import { QUIET } from '../../src/pace/state.js';
import { ShardCore } from '../../src/shard/shard-core.js';
import { paceCore } from './core.js';

/** A core of the rules of `paces` that starts from `state` for `key`, as a restart from a snapshot does. */
function restarted(
  paces: ReadonlyMap<string, CompiledPace>,
  key: string,
  state: PaceState,
  timer: number | undefined,
  at: number,
) {
  const c = new ShardCore<PaceState, PaceOutput>(paceRules(paces), { nowMs: at });
  const json = JSON.parse(JSON.stringify(paceCodec.encode(state))) as PaceState;
  c.importState({ lsn: 1, keys: [[key, json, timer ?? null]] }, at);
  let lsn = 1;
  return { c, apply: (r: Parameters<typeof c.apply>[1]) => c.apply(++lsn, r), released: () => c.release(lsn) };
}

describe('pace rules: edges', () => {
  it('retired: a state is worth keeping while it holds any part, timer or not', () => {
    const rules = paceRules(new Map());
    const run = { runId: 'k@u1', events: [1], size: 1, order: 0 };
    expect(rules.retired(QUIET)).toBe(true);
    const parts: PaceState[] = [
      { ...QUIET, stage: 'gathering', window: { ...run, openedAt: 0, closesAt: 10 } },
      { ...QUIET, waiting: [run] },
      { ...QUIET, running: [{ ...run, startedAt: 0 }] },
      { ...QUIET, history: [0] },
      { ...QUIET, ids: { x: 'k@u1' }, idOrder: ['x'], idUntil: [10], idHead: 0 },
      { ...QUIET, seen: { 'orders/0': 3 }, seenUntil: 10 },
    ];
    for (const part of parts) expect([part, rules.retired(part)]).toEqual([part, false]);
  });

  it('answers a broker redelivery, while no window is open, with the run that waits last', () => {
    const paces = new Map<string, CompiledPace>([
      ['p', { kind: 'each', dedupMs: 1000, rate: { max: 1, perMs: 300, drop: false } }],
    ]);
    const { apply, released } = paceCore(paces);
    const key = coordinatorKey('p', 'k');
    for (let off = 0; off < 4; off++)
      apply({ key, at: 0, type: EVENT, data: { e: off, r: `u${off}`, src: 'orders/0', off } });
    expect(released()).toEqual([expect.objectContaining({ id: 'k@u0' })]);
    expect(apply({ key, at: 1, type: EVENT, data: { e: 1, r: 'again', src: 'orders/0', off: 1 } })).toEqual({
      kind: 'run',
      runId: 'k@u3',
      duplicate: true,
    });
  });

  it('a subscriber no longer mounted: an event first moves its coordinator on as a timer would, and a batch left at MAX_BATCH - 1 events closes on the next', () => {
    const key = coordinatorKey('q', 'k');
    const before = paceCore(
      new Map<string, CompiledPace>([
        [
          'q',
          { kind: 'batch', max: MAX_BATCH, waitMs: 10_000, dedupMs: 1000, rate: { max: 1, perMs: 500, drop: false } },
        ],
      ]),
    );
    before.apply({ key, at: 0, type: EVENT, data: { e: 'first', r: 'u-first' } });
    before.apply({ key, at: 10_000, type: 'timer' });
    expect(before.released()).toEqual([expect.objectContaining({ id: 'k@u-first', startedAt: 10_000 })]);
    for (let i = 1; i < MAX_BATCH; i++) before.apply({ key, at: 10_001, type: EVENT, data: { e: i, r: `u${i}` } });
    const saved = before.c.state(key)!;
    expect(saved).toMatchObject({
      history: [10_000],
      stage: 'gathering',
      window: { runId: 'k@u1', size: MAX_BATCH - 1 },
    });
    // The next life mounts no subscriber `q`: the event joins the open window, which is full and goes at once.
    const after = restarted(new Map(), key, saved, before.c.timerOf(key), 10_002);
    expect(after.apply({ key, at: 10_002, type: EVENT, data: { e: MAX_BATCH, r: 'u-last' } })).toEqual({
      kind: 'run',
      runId: 'k@u1',
      duplicate: false,
    });
    expect(after.released()).toEqual([expect.objectContaining({ id: 'k@u1', size: MAX_BATCH, startedAt: 10_002 })]);
    expect(after.c.state(key)!.history).toEqual([]);
  });
});
