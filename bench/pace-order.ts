/**
 * bench/pace-order: what ordering waiting starts costs. In one run, side by side:
 *  (a) the dispatch scheduler of paced runs: 100,000 runs waiting over 10,000 keys (10 each, pushed in
 *      random key order), each with an `order` drawn from 0–3, then taken one by one by a worker (`next`,
 *      then `done`) until none is left. `RankedScheduler` with `turns` (and order), without turns (order
 *      only), under `byKey` with turns, beside the plain `FifoScheduler` of unpaced pools on the same jobs.
 *      Also a FIFO that keeps a head index instead of `Array.shift` (the pool's FIFO shifts: O(n) per take
 *      once V8 stops trimming large arrays in place). Printed: ns per start (push + next + done), median.
 *  (b) the coordinator's waiting queue under `perMinute`: 10,000 keys with 10 starts each over the rate,
 *      the starts appended as `event` records to a ShardCore with the pace rules (`perMinute: 1`, with and
 *      without order), then every waiting start released by its timer records; beside the same events
 *      without a rate (each a run at once). ns per start, median of the rounds.
 *
 *   npm run bench:pace-order
 *   BENCH_ROUNDS=7 BENCH_KEYS=10000 BENCH_PER_KEY=10 npm run bench:pace-order
 */
import { RankedScheduler } from '../src/dispatch/ranked.js';
import { FifoScheduler, type Keyed, type Scheduler } from '../src/dispatch/strategy.js';
import type { CompiledPace } from '../src/pace/config.js';
import { coordinatorKey, EVENT, paceRules, type PaceOutput, type PaceState } from '../src/pace/rules.js';
import { TIMER } from '../src/shard/rules.js';
import { ShardCore } from '../src/shard/shard-core.js';
import { seeded } from '../test/helpers.js'; // mulberry32: the same jobs in every round
import { median } from './stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const PER_KEY = Number(process.env.BENCH_PER_KEY ?? 10);
const N = KEYS * PER_KEY;

interface Job extends Keyed {
  readonly key: string;
  readonly order: number;
}

function jobs(): Job[] {
  const random = seeded(7);
  const keys = Array.from({ length: KEYS }, (_, i) => `key-${i}`);
  const out: Job[] = [];
  for (let k = 0; k < KEYS; k++)
    for (let j = 0; j < PER_KEY; j++) out.push({ key: keys[k]!, order: Math.floor(random() * 4) });
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** ns per start: push all, then next + done until empty. Returns the order of keys taken, to check. */
function drain(make: () => Scheduler<Job>, all: readonly Job[]): { ns: number; taken: number } {
  const s = make();
  const t0 = process.hrtime.bigint();
  for (const j of all) s.push(j);
  let taken = 0;
  for (let j = s.next(); j !== undefined; j = s.next()) {
    s.done(j);
    taken++;
  }
  return { ns: Number(process.hrtime.bigint() - t0) / all.length, taken };
}

function coordinator(pace: CompiledPace | undefined, withOrder: boolean): { ns: number; runs: number } {
  const paces = new Map<string, CompiledPace>(pace ? [['s', pace]] : [['s', { kind: 'each', dedupMs: 600_000 }]]);
  const core = new ShardCore<PaceState, PaceOutput>(paceRules(paces), { nowMs: 0 });
  const random = seeded(9);
  let lsn = 0;
  let runs = 0;
  const t0 = process.hrtime.bigint();
  for (let j = 0; j < PER_KEY; j++) {
    for (let k = 0; k < KEYS; k++) {
      core.apply(++lsn, {
        key: coordinatorKey('s', `key-${k}`),
        at: j,
        type: EVENT,
        data: { e: j, r: `u${lsn}`, ...(withOrder ? { o: Math.floor(random() * 4) } : {}) },
      });
    }
  }
  runs += core.release(lsn).length;
  // Every minute, each key's timer record starts its next waiting start.
  for (let now = 60_000; runs < N; now += 60_000) {
    for (let keys = core.due(now, 100_000); keys.length > 0; keys = core.due(now, 100_000))
      for (const key of keys) core.apply(++lsn, { key, at: now, type: TIMER });
    runs += core.release(lsn).length;
    if (now > 60_000 * (PER_KEY + 5)) throw new Error(`only ${runs} of ${N} runs started`);
  }
  return { ns: Number(process.hrtime.bigint() - t0) / N, runs };
}

const fmt = (ns: number): string => ns.toFixed(0).padStart(6);

/** A FIFO that never shifts (a head index): what a queue costs without `Array.shift`. */
class HeadFifo<J extends Keyed> implements Scheduler<J> {
  private items: J[] = [];
  private head = 0;
  push(job: J): boolean {
    this.items.push(job);
    return true;
  }
  next(): J | undefined {
    if (this.head === this.items.length) return undefined;
    const job = this.items[this.head++];
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    }
    return job;
  }
  done(): void {}
}

const all = jobs();
const schedulers: [string, () => Scheduler<Job>][] = [
  ['FIFO (unpaced pool)', () => new FifoScheduler<Job>()],
  ['FIFO with a head index', () => new HeadFifo<Job>()],
  ['ranked: order + turns', () => new RankedScheduler<Job>({ byKey: false, turns: true })],
  ['ranked: order only', () => new RankedScheduler<Job>({ byKey: false, turns: false })],
  ['ranked: order + turns, byKey', () => new RankedScheduler<Job>({ byKey: true, turns: true })],
];
const rates: [string, CompiledPace | undefined, boolean][] = [
  ['no rate (each start a run)', undefined, false],
  ['perMinute: 1', { kind: 'each', dedupMs: 600_000, rate: { max: 1, perMs: 60_000, drop: false } }, false],
  ['perMinute: 1 + order', { kind: 'each', dedupMs: 600_000, rate: { max: 1, perMs: 60_000, drop: false } }, true],
];

console.log(
  `Node ${process.version}; ${N.toLocaleString('en')} waiting starts over ${KEYS.toLocaleString('en')} keys; median of ${ROUNDS} rounds (round-robin order inside a round)`,
);
const sched = new Map<string, number[]>();
const coord = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, make] of r % 2 === 0 ? schedulers : [...schedulers].reverse()) {
    const { ns, taken } = drain(make, all);
    if (taken !== N) throw new Error(`${name}: took ${taken} of ${N}`);
    sched.set(name, [...(sched.get(name) ?? []), ns]);
  }
  for (const [name, pace, withOrder] of rates) {
    const { ns, runs } = coordinator(pace, withOrder);
    if (runs !== N) throw new Error(`${name}: ${runs} of ${N} ran`);
    coord.set(name, [...(coord.get(name) ?? []), ns]);
  }
}
const fifo = median(sched.get('FIFO (unpaced pool)')!);
console.log('\n(a) dispatch scheduler: ns per start (push + next + done)');
for (const [name, xs] of sched)
  console.log(
    `  ${name.padEnd(32)} ${fmt(median(xs))} ns  (${(median(xs) / fifo).toFixed(1)}× FIFO; rounds ${xs.map((x) => x.toFixed(0)).join(', ')})`,
  );
const plain = median(coord.get('no rate (each start a run)')!);
console.log('\n(b) coordinator rules (ShardCore.apply, no I/O): ns per start, its event and release records');
for (const [name, xs] of coord)
  console.log(
    `  ${name.padEnd(32)} ${fmt(median(xs))} ns  (${(median(xs) / plain).toFixed(1)}× no rate; rounds ${xs.map((x) => x.toFixed(0)).join(', ')})`,
  );
