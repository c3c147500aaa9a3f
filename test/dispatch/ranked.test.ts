import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RankedScheduler, ranked } from '../../src/dispatch/ranked.js';

interface J {
  readonly key: string | undefined;
  readonly order: number;
  readonly n: number;
}

describe('RankedScheduler', () => {
  it('is the strategy of lanes under byKey and of a pool otherwise, with n workers', () => {
    expect(ranked(3, { byKey: true, turns: false })).toMatchObject({ name: 'lanes', workers: 3 });
    expect(ranked(5, { byKey: false, turns: true })).toMatchObject({ name: 'pool', workers: 5 });
    expect(ranked(1, { byKey: true, turns: true }).scheduler()).toBeInstanceOf(RankedScheduler);
  });

  it('without turns, matches a model: highest order first, then oldest; under byKey one run of a key at a time (property)', () => {
    const op = fc.oneof(
      fc.record({
        t: fc.constant('push' as const),
        key: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
        order: fc.integer({ min: -1, max: 2 }),
      }),
      fc.record({ t: fc.constant('next' as const) }),
      fc.record({ t: fc.constant('done' as const), i: fc.nat() }),
    );
    let longest = 0;
    let deepest = 0;
    fc.assert(
      fc.property(fc.boolean(), fc.array(op, { maxLength: 300, size: 'max' }), (byKey, ops) => {
        longest = Math.max(longest, ops.length);
        const s = new RankedScheduler<J>({ byKey, turns: false });
        const waiting: J[] = [];
        const running: J[] = [];
        let n = 0;
        for (const o of ops) {
          if (o.t === 'push') {
            const job = { key: o.key, order: o.order, n: n++ };
            const runnable = s.push(job);
            expect(runnable).toBe(!byKey || job.key === undefined || !running.some((r) => r.key === job.key));
            waiting.push(job);
          } else if (o.t === 'next') {
            const free = waiting.filter((j) => !byKey || j.key === undefined || !running.some((r) => r.key === j.key));
            // Of each key only its best waiting job may go (a key's jobs by order, then age).
            const best = free.sort((x, y) => y.order - x.order || x.n - y.n)[0];
            const got = s.next();
            expect(got).toBe(best);
            if (got) {
              waiting.splice(waiting.indexOf(got), 1);
              running.push(got);
            }
          } else if (running.length > 0) {
            const [job] = running.splice(o.i % running.length, 1);
            s.done(job!);
          }
          expect(s.waiting).toBe(waiting.length);
          deepest = Math.max(deepest, waiting.length);
        }
      }),
      { numRuns: 300 },
    );
    // The runs were as long as maxLength says (fast-check caps arrays at 10 without size: 'max'), and runs
    // piled up behind each other.
    expect(longest).toBeGreaterThan(250);
    expect(deepest).toBeGreaterThan(20);
  });

  it('with turns, matches a model: highest order first, then keys in the order they joined the rotation (property)', () => {
    const op = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          t: fc.constant('push' as const),
          key: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { nil: undefined, freq: 6 }),
          order: fc.integer({ min: -1, max: 2 }),
        }),
      },
      { weight: 2, arbitrary: fc.record({ t: fc.constant('next' as const) }) },
      { weight: 1, arbitrary: fc.record({ t: fc.constant('done' as const), i: fc.nat() }) },
    );
    // The model: per key (undefined for keyless runs) its waiting runs; the keys in the rotation with the turn
    // they took when they joined it; under byKey the keys with a run running.
    let longest = 0;
    let longestRun = 0;
    fc.assert(
      fc.property(fc.boolean(), fc.array(op, { minLength: 1, maxLength: 400, size: 'max' }), (byKey, ops) => {
        longestRun = Math.max(longestRun, ops.length);
        const s = new RankedScheduler<J>({ byKey, turns: true });
        const waiting = new Map<string | undefined, J[]>();
        const turnOf = new Map<string | undefined, number>();
        const busy = new Set<string | undefined>();
        const running: J[] = [];
        let turn = 0;
        let n = 0;
        const best = (jobs: J[]) =>
          jobs.reduce((x, y) => (y.order > x.order || (y.order === x.order && y.n < x.n) ? y : x));
        const join = (key: string | undefined) => {
          if ((waiting.get(key)?.length ?? 0) > 0 && !busy.has(key)) turnOf.set(key, turn++);
        };
        for (const o of ops) {
          if (o.t === 'push') {
            const job = { key: o.key, order: o.order, n: n++ };
            waiting.set(o.key, [...(waiting.get(o.key) ?? []), job]);
            expect(s.push(job)).toBe(!busy.has(o.key));
            if (!turnOf.has(o.key)) join(o.key);
          } else if (o.t === 'next') {
            // The key whose best run has the highest order goes; among equal order, the earliest turn.
            let pick: string | undefined | null = null;
            for (const [key, t] of turnOf) {
              if (pick === null) pick = key;
              else {
                const a = best(waiting.get(key)!);
                const b = best(waiting.get(pick)!);
                if (a.order > b.order || (a.order === b.order && t < turnOf.get(pick)!)) pick = key;
              }
            }
            const got = s.next();
            if (pick === null) {
              expect(got).toBeUndefined();
              continue;
            }
            const job = best(waiting.get(pick)!);
            expect(got).toBe(job);
            waiting.get(pick)!.splice(waiting.get(pick)!.indexOf(job), 1);
            turnOf.delete(pick);
            running.push(job);
            if (byKey && pick !== undefined) busy.add(pick);
            else join(pick); // back into the rotation, at its end
          } else if (running.length > 0) {
            const [job] = running.splice(o.i % running.length, 1);
            s.done(job!);
            if (byKey && job!.key !== undefined) {
              busy.delete(job!.key);
              join(job!.key);
            }
          }
          expect(s.waiting).toBe([...waiting.values()].reduce((sum, jobs) => sum + jobs.length, 0));
          longest = Math.max(longest, s.waiting);
        }
      }),
      { numRuns: 150 },
    );
    expect(longestRun).toBeGreaterThan(300); // as long as maxLength says (fast-check caps arrays at 10 without size: 'max')
    expect(longest).toBeGreaterThan(30); // runs piled up behind each other: the rotation was in play
  });

  it('with turns, one key with 10,000 waiting runs holds another key’s single run back by one turn at most', () => {
    const s = new RankedScheduler<J>({ byKey: false, turns: true });
    for (let i = 0; i < 10_000; i++) s.push({ key: 'busy', order: 0, n: i });
    s.push({ key: 'quiet', order: 0, n: -1 });
    expect([s.next()!.key, s.next()!.key]).toEqual(['busy', 'quiet']);
    // A higher order goes first, and among it keys take turns, each keeping its place in the rotation.
    s.push({ key: 'x', order: 1, n: -2 });
    s.push({ key: 'busy', order: 1, n: -3 });
    s.push({ key: 'x', order: 1, n: -4 });
    expect([s.next()!.n, s.next()!.n, s.next()!.n, s.next()!.key]).toEqual([-3, -2, -4, 'busy']); // busy's turn came before x joined
    expect(s.waiting).toBe(9_998);
  });
});
