import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  stickyAssign,
  type StickyAssignment,
  type StickyMember,
} from '../../../../src/brokers/kafka/group/sticky-assign.js';

const T = 'orders';
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const id = (i: number): string => `m${String(i).padStart(2, '0')}`;

/** A member reading `topics`, owning `owned` of topic T (or per topic) in `generation`. */
function member(
  memberId: string,
  owned: readonly number[] | Record<string, number[]> = [],
  generation = 1,
  topics: string[] = [T],
): StickyMember {
  const claims = Array.isArray(owned) ? { [T]: owned as number[] } : (owned as Record<string, number[]>);
  return { id: memberId, topics, generation, owned: new Map(Object.entries(claims)) };
}

/** The partitions of topic T per member id. */
const ofTopic = (a: StickyAssignment, topic = T): Map<string, number[]> =>
  new Map([...a].flatMap(([m, topics]) => (topics.has(topic) ? [[m, topics.get(topic)!] as const] : [])));

/** The members that reread what `a` gave them: each claims its partitions of `a` in `generation`. */
const claimsOf = (a: StickyAssignment, generation: number, topics = [T]): StickyMember[] =>
  [...a].map(([m, owned]) => ({ id: m, topics, generation, owned }));

/** How many partitions of `topic` changed hands from `before` to `after` (a partition new to it does too). */
function moves(before: StickyAssignment, after: StickyAssignment, topic = T): number {
  const owner = new Map<number, string>();
  for (const [m, ps] of ofTopic(before, topic)) for (const p of ps) owner.set(p, m);
  let moved = 0;
  for (const [m, ps] of ofTopic(after, topic)) for (const p of ps) if (owner.get(p) !== m) moved++;
  return moved;
}

/** Every partition of `topic` once, to a member that reads it, and balanced over its readers. */
function expectValid(a: StickyAssignment, members: readonly StickyMember[], topic: string, partitions: number[]) {
  const readers = members.filter((m) => m.topics.includes(topic)).map((m) => m.id);
  const mine = ofTopic(a, topic);
  expect([...mine.keys()].sort()).toEqual([...new Set(readers)].sort());
  const all = [...mine.values()].flat().sort((x, y) => x - y);
  expect(all).toEqual(readers.length === 0 ? [] : [...partitions].sort((x, y) => x - y));
  const counts = [...mine.values()].map((ps) => ps.length);
  if (counts.length > 0) expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
}

describe('stickyAssign', () => {
  it('deals a new group in member-id order, and lists each topic a member reads, with no partitions too', () => {
    const members = [member('b'), member('a'), member('c', [], 1, [T, 'quiet'])];
    const a = stickyAssign(members, new Map([[T, range(7)]]));
    expect(a).toEqual(
      new Map([
        ['a', new Map([[T, [0, 1, 2]]])],
        ['b', new Map([[T, [3, 4]]])],
        [
          'c',
          new Map([
            [T, [5, 6]],
            ['quiet', []],
          ]),
        ],
      ]),
    );
  });

  it('3 members to 2: the survivors keep all they had, and only the leaver’s partitions move', () => {
    const three = stickyAssign([member('a'), member('b'), member('c')], new Map([[T, range(6)]]));
    const two = stickyAssign(
      claimsOf(three, 1).filter((m) => m.id !== 'b'),
      new Map([[T, range(6)]]),
    );
    const before = ofTopic(three);
    const after = ofTopic(two);
    for (const m of ['a', 'c']) expect(after.get(m)).toEqual(expect.arrayContaining(before.get(m)!));
    expect(moves(three, two)).toBe(before.get('b')!.length);
  });

  it('deals each topic over its own readers only', () => {
    const members = [member('a', [], 1, ['x']), member('b', [], 1, ['x', 'y']), member('c', [], 1, ['y'])];
    const a = stickyAssign(
      members,
      new Map([
        ['x', range(4)],
        ['y', range(2)],
      ]),
    );
    expect(ofTopic(a, 'x')).toEqual(
      new Map([
        ['a', [0, 1]],
        ['b', [2, 3]],
      ]),
    );
    expect(ofTopic(a, 'y')).toEqual(
      new Map([
        ['b', [0]],
        ['c', [1]],
      ]),
    );
  });

  it('a newer claim wins over an older one', () => {
    const a = stickyAssign([member('a', [0, 1], 3), member('b', [1, 2], 5)], new Map([[T, range(4)]]));
    expect(ofTopic(a)).toEqual(
      new Map([
        ['a', [0, 3]],
        ['b', [1, 2]],
      ]),
    );
  });

  it('two claims to one partition in one generation both lose', () => {
    const a = stickyAssign([member('b'), member('c', [0], 5), member('d', [0], 5)], new Map([[T, range(3)]]));
    expect(ofTopic(a)).toEqual(
      new Map([
        ['b', [0]],
        ['c', [1]],
        ['d', [2]],
      ]),
    );
  });

  it('ignores claims to partitions the topic no longer has, to topics the member no longer reads, and repeats', () => {
    const a = stickyAssign(
      [member('a', { [T]: [5, 5, 1, 1], gone: [0] }), member('b', [9])],
      new Map([
        [T, range(2)],
        ['gone', range(1)],
      ]),
    );
    expect(a).toEqual(
      new Map([
        ['a', new Map([[T, [1]]])],
        ['b', new Map([[T, [0]]])],
      ]),
    );
  });

  it('gives the shares above the floor to the members that keep the most', () => {
    // 5 partitions over 2: one gets 3. a claims 2, b claims 3: b keeps its 3, a its 2: nothing moves.
    const a = stickyAssign([member('a', [0, 1]), member('b', [2, 3, 4])], new Map([[T, range(5)]]));
    expect(ofTopic(a)).toEqual(
      new Map([
        ['a', [0, 1]],
        ['b', [2, 3, 4]],
      ]),
    );
  });

  it('a topic no member reads, or that has no partitions known, gives nothing to anyone', () => {
    const a = stickyAssign([member('a', [], 1, ['x'])], new Map([['y', range(3)]]));
    expect(a).toEqual(new Map([['a', new Map([['x', []]])]]));
    expect(stickyAssign([], new Map([[T, range(3)]]))).toEqual(new Map());
  });
});

/** Up to 12 members with distinct ids, reading topic T, each claiming some partitions (some gone) in some generation. */
const groupArb = fc
  .record({
    partitions: fc.integer({ min: 0, max: 40 }),
    members: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 12 }),
  })
  .chain(({ partitions, members }) =>
    fc.record({
      partitions: fc.constant(partitions),
      members: fc.tuple(
        ...members.map((i) =>
          fc.record({
            id: fc.constant(id(i)),
            topics: fc.constant([T]),
            generation: fc.integer({ min: 0, max: 3 }),
            owned: fc
              .array(fc.integer({ min: 0, max: partitions + 3 }), { maxLength: partitions + 3 })
              .map((ps) => new Map([[T, ps]])),
          }),
        ),
      ),
    }),
  );

/** What each member may keep: the partitions the topic has of which it is the one claimant of the newest generation. */
function validClaims(members: readonly StickyMember[], partitions: number): Map<string, Set<number>> {
  const valid = new Map(members.map((m) => [m.id, new Set<number>()]));
  for (let p = 0; p < partitions; p++) {
    const claimants = members.filter((m) => m.owned.get(T)!.includes(p));
    if (claimants.length === 0) continue;
    const newest = Math.max(...claimants.map((m) => m.generation));
    const top = claimants.filter((m) => m.generation === newest);
    if (top.length === 1) valid.get(top[0]!.id)!.add(p);
  }
  return valid;
}

describe('stickyAssign: properties', () => {
  it('assigns every partition exactly once, balanced, and keeps as many valid claims as any balanced assignment could', () => {
    fc.assert(
      fc.property(groupArb, ({ partitions, members }) => {
        const a = stickyAssign(members, new Map([[T, range(partitions)]]));
        expectValid(a, members, T, range(partitions));
        const valid = validClaims(members, partitions);
        const base = Math.floor(partitions / members.length);
        const extra = partitions % members.length;
        const mine = ofTopic(a);
        let kept = 0;
        for (const m of members) {
          const keeps = mine.get(m.id)!.filter((p) => valid.get(m.id)!.has(p)).length;
          // Every member keeps its claims up to the floor share.
          expect(keeps).toBeGreaterThanOrEqual(Math.min(valid.get(m.id)!.size, base));
          kept += keeps;
        }
        // And the shares above the floor go where they keep the most: no balanced assignment keeps more.
        const sizes = [...valid.values()].map((s) => s.size);
        const best =
          sizes.reduce((n, k) => n + Math.min(k, base), 0) + Math.min(extra, sizes.filter((k) => k > base).length);
        expect(kept).toBe(best);
      }),
      { numRuns: 300 },
    );
  });

  it('does not depend on the order of the members', () => {
    fc.assert(
      fc.property(
        groupArb.chain((g) =>
          fc.record({ g: fc.constant(g), order: fc.shuffledSubarray(g.members, { minLength: g.members.length }) }),
        ),
        ({ g, order }) => {
          const partitions = new Map([[T, range(g.partitions)]]);
          expect(stickyAssign(order, partitions)).toEqual(stickyAssign(g.members, partitions));
        },
      ),
      { numRuns: 200 },
    );
  });

  const changeArb = fc.record({
    partitions: fc.integer({ min: 0, max: 40 }),
    members: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 2, maxLength: 12 }).map((ids) => ids.map(id)),
    leaver: fc.nat(),
    joiner: fc.integer({ min: 31, max: 40 }).map(id),
  });

  it('one member leaving moves only its partitions: every other member keeps all it had', () => {
    fc.assert(
      fc.property(changeArb, ({ partitions, members, leaver }) => {
        const topics = new Map([[T, range(partitions)]]);
        const before = stickyAssign(
          members.map((m) => member(m)),
          topics,
        );
        const gone = members[leaver % members.length]!;
        const stay = claimsOf(before, 1).filter((m) => m.id !== gone);
        const after = stickyAssign(stay, topics);
        expectValid(after, stay, T, range(partitions));
        for (const m of stay)
          expect(ofTopic(after).get(m.id)).toEqual(expect.arrayContaining(ofTopic(before).get(m.id)!));
        expect(moves(before, after)).toBe(ofTopic(before).get(gone)!.length);
      }),
      { numRuns: 300 },
    );
  });

  it('one member joining moves only what it is given: each other member keeps min(what it had, its share)', () => {
    fc.assert(
      fc.property(changeArb, ({ partitions, members, joiner }) => {
        const topics = new Map([[T, range(partitions)]]);
        const before = stickyAssign(
          members.map((m) => member(m)),
          topics,
        );
        const all = [...claimsOf(before, 1), member(joiner)];
        const after = stickyAssign(all, topics);
        expectValid(after, all, T, range(partitions));
        const mine = ofTopic(after);
        for (const m of members) {
          const had = ofTopic(before).get(m)!;
          const kept = mine.get(m)!.filter((p) => had.includes(p)).length;
          expect(kept).toBe(Math.min(had.length, mine.get(m)!.length));
          expect(kept).toBeGreaterThanOrEqual(Math.min(had.length, Math.floor(partitions / all.length)));
        }
        expect(moves(before, after)).toBe(mine.get(joiner)!.length);
      }),
      { numRuns: 300 },
    );
  });

  it('with several topics and members reading different ones, each topic is valid and balanced over its readers', () => {
    const topics = ['x', 'y', 'z'];
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.subarray(topics), { minLength: 12, maxLength: 12 }),
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 3, maxLength: 3 }),
        (ids, reads, counts) => {
          const partitions = new Map(topics.map((t, i) => [t, range(counts[i]!)]));
          const members = ids.map((i, k) => member(id(i), {}, 1, reads[k]));
          const first = stickyAssign(members, partitions);
          // Again, with every member claiming what it got: nothing moves.
          const again = stickyAssign(
            [...first].map(([m, owned]) => ({
              id: m,
              topics: members.find((x) => x.id === m)!.topics,
              generation: 1,
              owned,
            })),
            partitions,
          );
          expect(again).toEqual(first);
          for (const t of topics) expectValid(first, members, t, partitions.get(t)!);
          for (const m of members) expect([...first.get(m.id)!.keys()].sort()).toEqual([...new Set(m.topics)].sort());
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('stickyAssign: co-partitioned topics', () => {
  const S = 'orders.requests';

  it('topics read by the same members with the same partitions are dealt as one', () => {
    const members = [member('a', [], 1, [T, S]), member('b', [], 1, [S, T]), member('c', [], 1, [T, S, 'x'])];
    const a = stickyAssign(
      members,
      new Map([
        [T, range(7)],
        [S, range(7)],
        ['x', range(7)],
      ]),
    );
    expect(ofTopic(a, S)).toEqual(ofTopic(a, T));
    expect(ofTopic(a, 'x')).toEqual(new Map([['c', range(7)]]));
  });

  it('a member keeps partition p of both when it claims p of either', () => {
    const members = [member('a', { [T]: [0, 1] }, 1, [T, S]), member('b', { [S]: [2, 3] }, 1, [T, S])];
    const a = stickyAssign(
      members,
      new Map([
        [T, range(4)],
        [S, range(4)],
      ]),
    );
    expect(ofTopic(a, T)).toEqual(
      new Map([
        ['a', [0, 1]],
        ['b', [2, 3]],
      ]),
    );
    expect(ofTopic(a, S)).toEqual(ofTopic(a, T));
  });

  it('properties: co-partitioned topics get one assignment, through joins and leaves; others are dealt on their own', () => {
    const claimArb = fc.uniqueArray(fc.integer({ min: 0, max: 12 }), { maxLength: 6 });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.record({ t: claimArb, s: claimArb, gen: fc.integer({ min: 0, max: 3 }) }), {
          minLength: 8,
          maxLength: 8,
        }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 12 }),
        (ids, claims, n, m) => {
          const partitions = new Map([
            [T, range(n)],
            [S, range(n)],
            ['x', range(m)],
          ]);
          const members = ids.map((i, k) =>
            member(id(i), { [T]: claims[k]!.t, [S]: claims[k]!.s }, claims[k]!.gen, [T, S, 'x']),
          );
          const first = stickyAssign(members, partitions);
          for (const t of [T, S, 'x']) expectValid(first, members, t, partitions.get(t)!);
          expect(ofTopic(first, S)).toEqual(ofTopic(first, T));
          if (m === n) expect(ofTopic(first, 'x')).toEqual(ofTopic(first, T));
          // Every member claiming what it got, one left and a new one joined: still one assignment.
          const next = [...claimsOf(first, 2, [T, S, 'x']).slice(1), member('new', [], 1, [T, S, 'x'])];
          const again = stickyAssign(next, partitions);
          expect(ofTopic(again, S)).toEqual(ofTopic(again, T));
          // A member that stops reading S breaks the co-partitioning, and each topic is still valid.
          const apart = [...next.slice(0, -1), member('new', [], 1, [T])];
          const split = stickyAssign(apart, partitions);
          for (const t of [T, S]) expectValid(split, apart, t, partitions.get(t)!);
        },
      ),
      { numRuns: 200 },
    );
  });
});
