/**
 * bench/inspect: what a page of `app.inspectRuns` costs as the key space grows, in one run. A shard's core
 * (the pace rules, `debounce: '1 hour'`, the default 10,000 keys loaded: the rest parked) holds N keys, each
 * with an open window; then, for N = 10,000, 100,000 and 1,000,000:
 *  - a page: the 50 newest open windows (`runPage`, what `inspectRuns` answers), the median of 20;
 *  - baseline, the floor: decoding 50 parked keys' states (`core.state(key)`), what a page of parked keys must
 *    do at least (the newest keys, on the first page, are still loaded: cheaper);
 *  - beside it, what a page would cost without the core's marks: decoding every key's state to find the open
 *    windows (one walk);
 *  - the counts of `app.inspect()` (`shardInspection`).
 * The figure: a page's time over the floor's, which must not grow with N.
 *
 *   npm run bench:inspect          (BENCH_SIZES=10000,100000 for fewer)
 */
import { performance } from 'node:perf_hooks';
import { parsePace } from '../src/declare/pace.js';
import { coordinatorKey, EVENT, paceRules, type PaceOutput, type PaceState } from '../src/pace/rules.js';
import { encodeEvent } from '../src/pace/codec.js';
import { ShardCore } from '../src/shard/shard-core.js';
import { runPage, shardInspection } from '../src/pace-stage/pace-inspection.js';
import type { PaceHost } from '../src/pace-stage/shard-placement.js';

const SIZES = (process.env.BENCH_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const PAGE = 50;
const REPEATS = 20;
const T0 = 1_000_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (n: number): string => n.toFixed(n < 1 ? 3 : 1);

function timeIt(f: () => void): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

function shardOf(keys: number): { host: PaceHost; core: ShardCore<PaceState, PaceOutput> } {
  const pace = parsePace({ debounce: '1 hour' }, 'bench');
  const core = new ShardCore(paceRules(new Map([['p', pace]])), { nowMs: T0 });
  for (let k = 0; k < keys; k++) {
    const data = encodeEvent({ event: { k }, runUuid: `u${k}`, order: 0 });
    core.apply(k + 1, { key: coordinatorKey('p', `key-${k}`), at: T0 + k, type: EVENT, data });
    core.release(k + 1);
  }
  const host = { core, shard: 0, now: () => T0 + keys, phase: 'serving' } as unknown as PaceHost;
  return { host, core };
}

console.log(`### inspect: a page of ${PAGE} open windows as the keys grow (median of ${REPEATS})`);
console.log(
  '| keys (parked) | a page, ms | floor: decode 50 parked states, ms | ratio | every state decoded, ms | inspect counts, ms |',
);
console.log('|---:|---:|---:|---:|---:|---:|');
for (const n of SIZES) {
  const { host, core } = shardOf(n);
  const pages: number[] = [];
  const floors: number[] = [];
  const counts: number[] = [];
  const oldest = Array.from({ length: PAGE }, (_, k) => coordinatorKey('p', `key-${k}`));
  for (let i = 0; i < REPEATS; i++) {
    pages.push(timeIt(() => runPage([host], 'p', undefined, { limit: PAGE })));
    floors.push(timeIt(() => oldest.forEach((k) => core.state(k))));
    counts.push(timeIt(() => shardInspection(host, 'p')));
  }
  const walk = timeIt(() => {
    let open = 0;
    for (const key of core.keys()) if (core.state(key)?.stage === 'gathering') open++;
    if (open !== n) throw new Error(`expected ${n} open windows, found ${open}`);
  });
  const page = median(pages);
  const floor = median(floors);
  console.log(
    `| ${n.toLocaleString('en')} (${core.parkedCount.toLocaleString('en')}) | ${ms(page)} | ${ms(floor)} | ${(page / floor).toFixed(1)} | ${ms(walk)} | ${ms(median(counts))} |`,
  );
}
