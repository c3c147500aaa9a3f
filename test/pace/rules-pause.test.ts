/**
 * Pause, resume, cancel and release in the pace rules, over random histories (fast-check): while a
 * subscriber's pause coordinator says paused no run of it starts, whatever records come; a cancelled run
 * never starts; a `release` starts at most as many runs as it says; resumed and released, every run waits
 * only for its rate; and another subscriber of the shard runs on through the pause.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CompiledPace } from '../../src/pace/config.js';
import {
  CANCEL,
  coordinatorKey,
  EVENT,
  PAUSE,
  pauseKey,
  RELEASE,
  RESUME,
  type PaceOutput,
  type PaceRun,
} from '../../src/pace/rules.js';
import { TIMER, type ShardRecord } from '../../src/shard/rules.js';
import { decodeRecord, encodeRecord } from '../../src/pace-stage/journal-record.js';
import { paceCore } from './core.js';

/** A record as a replay reads it back from the journal: what the live apply and the replay must agree on. */
const journaled = (r: ShardRecord): ShardRecord => decodeRecord(encodeRecord(r));

const paces = new Map<string, CompiledPace>([
  ['d', { kind: 'debounce', windowMs: 50, maxWaitMs: undefined, dedupMs: 1000 }],
  ['r', { kind: 'each', dedupMs: 1000, rate: { max: 2, perMs: 300, drop: false } }],
  ['b', { kind: 'batch', max: 3, waitMs: 100, dedupMs: 1000 }],
  ['o', { kind: 'each', dedupMs: 1000 }], // never paused: runs on beside the others
]);
const SUBS = ['d', 'r', 'b', 'o'] as const;
const PAUSABLE = ['d', 'r', 'b'] as const;

type Step =
  | { readonly op: 'event'; readonly sub: (typeof SUBS)[number]; readonly key: string; readonly dt: number }
  | { readonly op: 'timer' | 'release'; readonly sub: (typeof SUBS)[number]; readonly key: string; readonly dt: number }
  | { readonly op: 'pause' | 'resume'; readonly sub: (typeof PAUSABLE)[number]; readonly dt: number }
  | { readonly op: 'cancel'; readonly pick: number; readonly dt: number };

const keyArb = fc.constantFrom('k1', 'k2', 'k3');
const dtArb = fc.integer({ min: 0, max: 120 });
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('event' as const), sub: fc.constantFrom(...SUBS), key: keyArb, dt: dtArb }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom('timer' as const, 'release' as const),
      sub: fc.constantFrom(...SUBS),
      key: keyArb,
      dt: dtArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constantFrom('pause' as const, 'resume' as const),
      sub: fc.constantFrom(...PAUSABLE),
      dt: dtArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), pick: fc.nat(), dt: dtArb }) },
);

const isRun = (o: PaceOutput): o is PaceRun => !('dropped' in o);

describe('pace rules: pause, resume, cancel, release', () => {
  it('no run of a paused subscriber starts, a cancelled run never does, and a resume with a release per key leaves only rate waits', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 120 }), (steps) => {
        const { c, apply, released } = paceCore(paces);
        const paused = new Set<string>();
        const cancelled = new Set<string>();
        const opened: string[] = []; // run IDs receipts named, to pick cancels from
        let at = 1_000;
        let n = 0;
        for (const step of steps) {
          at += step.dt;
          let record: ShardRecord;
          if (step.op === 'pause' || step.op === 'resume') {
            record = { key: pauseKey(step.sub), at, type: step.op === 'pause' ? PAUSE : RESUME };
            if (step.op === 'pause') paused.add(step.sub);
            else paused.delete(step.sub);
          } else if (step.op === 'cancel') {
            if (opened.length === 0) continue;
            const runId = opened[step.pick % opened.length]!;
            const key = runId.slice(0, runId.lastIndexOf('@'));
            const sub = runId.startsWith('d|')
              ? 'd'
              : runId.startsWith('r|')
                ? 'r'
                : runId.startsWith('b|')
                  ? 'b'
                  : 'o';
            record = { key: coordinatorKey(sub, key), at, type: CANCEL, data: runId };
          } else if (step.op === 'event') {
            const key = `${step.sub}|${step.key}`;
            record = { key: coordinatorKey(step.sub, key), at, type: EVENT, data: { e: n, r: `u${n++}` } };
          } else {
            const s = step as Extract<Step, { op: 'timer' | 'release' }>;
            const key = coordinatorKey(s.sub, `${s.sub}|${s.key}`);
            record = s.op === 'timer' ? { key, at, type: TIMER } : { key, at, type: RELEASE, data: 1 };
          }
          const before = released().length; // nothing waits: released as applied
          expect(before).toBe(0);
          const reply = apply(journaled(record));
          if (step.op === 'cancel' && (reply === 'window' || reply === 'waiting')) cancelled.add(record.data as string);
          if (step.op === 'event' && (reply as { kind?: string }).kind === 'run')
            opened.push((reply as { runId: string }).runId);
          const out = released().filter(isRun);
          for (const run of out) {
            expect(paused.has(run.subscriber), `a run of paused ${run.subscriber} started`).toBe(false);
            expect(cancelled.has(run.id), `cancelled run ${run.id} started`).toBe(false);
          }
          if (step.op === 'release') expect(out.length).toBeLessThanOrEqual(1);
        }
        // Resume every subscriber and release every waiting key, past every window: only the rate holds runs.
        at += 10_000;
        for (const sub of PAUSABLE) apply({ key: pauseKey(sub), at, type: RESUME });
        for (const key of [...c.keys()]) if (!key.startsWith('\u0000')) apply({ key, at, type: TIMER });
        released();
        for (const key of c.keys()) {
          const s = c.state(key)!;
          if (s.waiting.length > 0) expect(key.startsWith(coordinatorKey('r', ''))).toBe(true); // only `r` has a rate
          expect(s.stage).toBe('quiet');
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a release starts as many waiting runs as it says, highest order first', () => {
    const { c, apply, released } = paceCore(paces);
    apply({ key: pauseKey('d'), at: 0, type: PAUSE });
    const key = coordinatorKey('d', 'k');
    for (const [i, at] of [
      [0, 10],
      [1, 100],
      [2, 200],
    ] as const) {
      apply({ key, at, type: EVENT, data: { e: i, r: `u${i}`, o: i } });
      apply({ key, at: at + 60, type: TIMER }); // the window closes: its run waits for the pause
    }
    expect(c.state(key)!.waiting.map((r) => r.events)).toEqual([[2], [1], [0]]);
    apply({ key: pauseKey('d'), at: 300, type: RESUME });
    expect(released().filter(isRun)).toEqual([]); // a resume wakes no key by itself: the host releases them
    apply({ key, at: 301, type: RELEASE, data: 1 });
    expect(
      released()
        .filter(isRun)
        .map((r) => r.events),
    ).toEqual([[2]]);
    apply({ key, at: 302, type: RELEASE, data: 2 });
    expect(
      released()
        .filter(isRun)
        .map((r) => r.events),
    ).toEqual([[1], [0]]);
  });

  it('a release without a count starts every waiting run the rate lets, live and as the journal reads it back', () => {
    for (const through of [(r: ShardRecord) => r, journaled]) {
      const { apply, released } = paceCore(paces);
      apply({ key: pauseKey('d'), at: 0, type: PAUSE });
      const key = coordinatorKey('d', 'k');
      for (const at of [10, 100]) {
        apply({ key, at, type: EVENT, data: { e: at, r: `u${at}` } });
        apply({ key, at: at + 60, type: TIMER });
      }
      apply({ key: pauseKey('d'), at: 300, type: RESUME });
      apply(through({ key, at: 301, type: RELEASE }));
      expect(
        released()
          .filter(isRun)
          .map((r) => r.events),
      ).toEqual([[10], [100]]);
    }
  });

  it('a pause coordinator is kept while paused and dropped once resumed: it holds nothing else', () => {
    const { c, apply } = paceCore(paces);
    expect(apply({ key: pauseKey('d'), at: 1, type: PAUSE })).toBe(true);
    expect(apply({ key: pauseKey('d'), at: 2, type: PAUSE })).toBe(false);
    expect(c.state(pauseKey('d'))).toMatchObject({ paused: true });
    expect(apply({ key: pauseKey('d'), at: 3, type: RESUME })).toBe(true);
    expect(c.state(pauseKey('d'))).toBeUndefined();
    expect(apply({ key: pauseKey('d'), at: 4, type: RESUME })).toBe(false);
  });
});
