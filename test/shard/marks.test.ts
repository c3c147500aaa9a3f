/**
 * The core's marks (`Rules.marks`): per group and mark, the keys whose state carries it — kept up to date as
 * records apply, as keys are parked and loaded, retired, and imported from a snapshot — and what a transition
 * reads of another key's mark (`Effects.marked`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ShardCore } from '../../src/shard/shard-core.js';
import type { Rules } from '../../src/shard/rules.js';

/** A key's count: `add` adds, `zero` retires the key. A key counts double while its group's `hold` key is on. */
interface Count {
  n: number;
  on?: boolean;
}
const groupOf = (key: string): string => key.split('/')[0]!;
const rules: Rules<Count, never> = {
  initial: () => ({ n: 0 }),
  apply(state, record, fx) {
    if (record.type === 'zero') return { n: 0 };
    if (record.type === 'hold') return { ...state, on: record.data === true };
    const held = fx.marked(2, `${groupOf(record.key)}/hold`);
    return { ...state, n: state.n + (held ? 2 : 1) };
  },
  retired: (s) => s.n === 0 && s.on !== true,
  tallyGroup: groupOf,
  marks: [(s) => s.n % 2 === 1, (s) => s.n >= 3, (s) => s.on === true],
};

/** The keys of `group` whose state `mark` holds, as the core's states say: what its marks must be. */
function expected(core: ShardCore<Count, never>, group: string, mark: number): string[] {
  return [...core.keys()].filter((k) => groupOf(k) === group && rules.marks![mark]!(core.state(k)!)).sort();
}

const stepArb = fc.record({
  key: fc.constantFrom('a/1', 'a/2', 'a/3', 'b/1', 'b/2', 'a/hold', 'b/hold'),
  type: fc.constantFrom('add', 'add', 'add', 'zero'),
  on: fc.boolean(),
});

describe('ShardCore marks', () => {
  it('keep, per group and mark, exactly the keys whose state carries it, through parking, retiring and a snapshot', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 80 }), fc.integer({ min: 0, max: 80 }), (steps, cut) => {
        let core = new ShardCore(rules, { nowMs: 0, maxLoadedKeys: 1 }); // parks all but one or two keys
        steps.forEach((s, i) => {
          if (i === cut) {
            // Restart from a snapshot taken here: the marks are rebuilt from the states imported.
            const { lsn } = core.beginSnapshot();
            const entries: string[] = [];
            for (let c = core.snapshotChunk(3); c.length > 0; c = core.snapshotChunk(3)) entries.push(...c);
            core.endSnapshot();
            const restored = new ShardCore(rules, { nowMs: 0, maxLoadedKeys: 1 });
            restored.importState({ lsn, keys: entries.map((e) => JSON.parse(e) as [string, Count, null]) }, 0);
            core = restored;
          }
          const type = s.key.endsWith('/hold') ? 'hold' : s.type;
          core.apply(core.appliedLsn + 1, { key: s.key, at: i, type, data: s.on });
        });
        for (const group of ['a', 'b'])
          for (const mark of [0, 1, 2])
            expect([...core.marked(group, mark)].sort()).toEqual(expected(core, group, mark));
      }),
      { numRuns: 300 },
    );
  });

  it('let a transition read another key of its group, as the records before left it', () => {
    const core = new ShardCore(rules, { nowMs: 0 });
    core.apply(1, { key: 'a/1', at: 0, type: 'add' });
    core.apply(2, { key: 'a/hold', at: 0, type: 'hold', data: true });
    core.apply(3, { key: 'a/1', at: 0, type: 'add' }); // held: +2
    core.apply(4, { key: 'b/1', at: 0, type: 'add' }); // another group: +1
    expect(core.state('a/1')).toEqual({ n: 3 });
    expect(core.state('b/1')).toEqual({ n: 1 });
    core.apply(5, { key: 'a/hold', at: 0, type: 'hold', data: false }); // retires the hold key
    expect(core.state('a/hold')).toBeUndefined();
    expect(core.marked('a', 2).size).toBe(0);
    core.apply(6, { key: 'a/1', at: 0, type: 'add' });
    expect(core.state('a/1')).toEqual({ n: 4 });
  });

  it('list keys in the order they took the mark, and an unknown group as empty', () => {
    const core = new ShardCore(rules, { nowMs: 0 });
    core.apply(1, { key: 'a/2', at: 0, type: 'add' });
    core.apply(2, { key: 'a/1', at: 0, type: 'add' });
    core.apply(3, { key: 'a/2', at: 0, type: 'add' }); // even: loses mark 0
    core.apply(4, { key: 'a/2', at: 0, type: 'add' }); // odd again: takes it last
    expect([...core.marked('a', 0)]).toEqual(['a/1', 'a/2']);
    expect([...core.marked('nobody', 0)]).toEqual([]);
  });
});
