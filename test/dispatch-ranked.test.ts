import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RankedScheduler } from '../src/dispatch/ranked.js';

interface J {
  readonly key: string | undefined;
  readonly order: number;
  readonly n: number;
}

describe('RankedScheduler', () => {
  it('without turns, matches a model: highest order first, then oldest; under byKey one run of a key at a time (property)', () => {
    const op = fc.oneof(
      fc.record({ t: fc.constant('push' as const), key: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }), order: fc.integer({ min: -1, max: 2 }) }),
      fc.record({ t: fc.constant('next' as const) }),
      fc.record({ t: fc.constant('done' as const), i: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.boolean(), fc.array(op, { maxLength: 100 }), (byKey, ops) => {
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
        }
      }),
      { numRuns: 500 },
    );
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
