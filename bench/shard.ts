/**
 * bench/shard, in one run:
 *  (a) heap bytes per parked key with a pending timer at 1,000,000 keys: the ParkedTable beside a plain
 *      Map<string, { ref, timerAtMs }> of the same keys (key strings included on both sides);
 *  (b) a mass wake of 1,000,000 due timers through ShardHost over memoryStore: the host's heap per key after
 *      replay, the time from the wake to the first output handed out, and the longest event-loop stall while
 *      they fire (monitorEventLoopDelay) — with idle keys parked (the default) beside every key loaded
 *      (maxLoadedKeys above N, the host as it was before parking), and beside the same stall measure over a
 *      bare loop that runs the same number of setImmediate turns;
 *  (c) churn: the bytes a ParkedTable holds per parked key with 10,000 keys parked once (the baseline), and
 *      after 10,000,000 park/unpark cycles over the same keys; and a ShardCore's parkedBytes() with 2,000
 *      keys taking turns beyond maxLoadedKeys 1,000, after 10,000 records and after 800,000.
 *
 *   npm run bench:shard        (node needs --expose-gc; the npm script passes it)
 *   BENCH_PARTS=c npm run bench:shard     (some parts only; BENCH_CYCLES for (c))
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { SystemClock, memoryStore } from '../src/index.js';
import { ParkedTable } from '../src/shard/parked-table.js';
import { ShardCore } from '../src/shard/shard-core.js';
import { TIMER, type Rules } from '../src/shard/rules.js';
import { ShardHost } from '../src/pace-stage/shard-host.js';

const N = Number(process.env.BENCH_N ?? 1_000_000);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 1_000);
const PARTS = process.env.BENCH_PARTS ?? 'abc';
const CYCLES = Number(process.env.BENCH_CYCLES ?? 10_000_000);
const gc =
  (globalThis as { gc?: () => void }).gc ??
  (() => {
    throw new Error('run with --expose-gc');
  });
const fmtN = (n: number): string => Math.round(n).toLocaleString('en');
const used = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

// (a) Each structure builds its own key strings; after a full GC only what it retains counts.
if (PARTS.includes('a')) {
  const before = used();
  const table = new ParkedTable();
  for (let i = 0; i < N; i++) table.set(`key-${i}`, i + 1, 1_800_000_000_000 + i);
  const tableBytes = (used() - before) / N;
  const before2 = used();
  const map = new Map<string, { ref: number; timerAtMs: number }>();
  for (let i = 0; i < N; i++) map.set(`key-${i}`, { ref: i + 1, timerAtMs: 1_800_000_000_000 + i });
  const mapBytes = (used() - before2) / N;
  if (table.size !== N || map.size !== N) throw new Error('lost keys');
  map.clear();
  console.log(`bench/shard (a): ${N.toLocaleString('en')} parked keys with a timer, node ${process.version}`);
  console.log('| structure | heap bytes per key (keys included) | ratio to Map |');
  console.log('|---|---:|---:|');
  console.log(`| Map<string, { ref, timerAtMs }> | ${mapBytes.toFixed(1)} | 1.00 |`);
  console.log(`| ParkedTable | ${tableBytes.toFixed(1)} | ${(tableBytes / mapBytes).toFixed(2)} |`);
}

// (b)
type Out = { key: string };
const rules: Rules<{ at: number }, Out> = {
  initial: () => ({ at: 0 }),
  apply: (s, r, fx) => (r.type === TIMER ? (fx.output({ key: r.key }), { at: 0 }) : (fx.timer(r.at), { at: r.at })),
  retired: (s) => s.at === 0,
};
// Load N keys whose timers come due in ten minutes; then "restart" ten minutes later (a clock that jumps),
// replay the log into a fresh host, and let every overdue timer fire. Twice, each on a store of its own:
// idle keys parked (the default) and every key loaded (maxLoadedKeys above N: the host before parking).
class JumpClock extends SystemClock {
  offsetMs = 0;
  override now(): number {
    return super.now() + this.offsetMs;
  }
}
async function wake(maxLoadedKeys: number | undefined) {
  const clock = new JumpClock();
  const store = memoryStore({ shards: 1 });
  const loader = new ShardHost({ log: store.log(0), rules, clock, onOutput: () => {} });
  await loader.open();
  const dueAt = clock.now() + 600_000;
  for (let i = 0; i < N; i += 10_000) {
    await Promise.all(
      Array.from({ length: Math.min(10_000, N - i) }, (_, j) =>
        loader.append({ key: `k${i + j}`, type: 'event', at: dueAt }),
      ),
    );
  }
  await loader.close();
  clock.offsetMs = 600_000;
  let fired = 0;
  let firstAt = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const keepAlive = setInterval(() => {}, 1 << 30); // the system clock's timers do not hold the process
  const heapBefore = used();
  const host = new ShardHost({
    log: store.log(0),
    rules,
    clock,
    chunk: CHUNK,
    maxLoadedKeys,
    onOutput: () => {
      if (fired++ === 0) firstAt = performance.now();
      if (fired === N) done();
    },
  });
  await host.open(); // replays N records; their timers are all overdue
  const heapPerKey = (used() - heapBefore) / N; // the host's heap and array buffers for N idle keys (the store's records not included)
  const h = monitorEventLoopDelay({ resolution: 1 });
  const wakeAt = performance.now();
  h.enable();
  await all;
  h.disable();
  const result = { firstMs: firstAt - wakeAt, stallMs: h.max / 1e6, totalMs: performance.now() - wakeAt, heapPerKey };
  await host.close();
  clearInterval(keepAlive);
  return result;
}
if (PARTS.includes('b')) {
  const parked = await wake(undefined);
  const loaded = await wake(N + 1);
  // Baseline: the same stall measure over a bare loop of as many turns as the wake took chunks.
  const turns = Math.ceil(N / CHUNK);
  const hb = monitorEventLoopDelay({ resolution: 1 });
  hb.enable();
  for (let t = 0; t < turns; t++)
    await new Promise<void>((r) =>
      setImmediate(() => {
        for (let i = 0; i < CHUNK; i++) JSON.stringify({ i });
        r();
      }),
    );
  hb.disable();
  console.log(
    `\nbench/shard (b): restart with ${N.toLocaleString('en')} overdue timers (chunks of ${CHUNK.toLocaleString('en')} per turn), ShardHost over memoryStore`,
  );
  console.log('| measure | idle keys parked (default) | every key loaded (maxLoadedKeys > N) |');
  console.log('|---|---:|---:|');
  console.log(
    `| host heap + array buffers per key after open() | ${parked.heapPerKey.toFixed(1)} B | ${loaded.heapPerKey.toFixed(1)} B |`,
  );
  console.log(
    `| first output after open() returned | ${parked.firstMs.toFixed(1)} ms | ${loaded.firstMs.toFixed(1)} ms |`,
  );
  console.log(
    `| longest event-loop stall during the wake | ${parked.stallMs.toFixed(1)} ms | ${loaded.stallMs.toFixed(1)} ms |`,
  );
  console.log(
    `| all ${N.toLocaleString('en')} fired | ${(parked.totalMs / 1000).toFixed(2)} s | ${(loaded.totalMs / 1000).toFixed(2)} s |`,
  );
  console.log(
    `| longest stall, bare loop of ${turns} turns of ${CHUNK} JSON.stringify | ${(hb.max / 1e6).toFixed(1)} ms | |`,
  );
}

// (c)
if (PARTS.includes('c')) {
  const K = 10_000;
  const keys = Array.from({ length: K }, (_, i) => `tenant-${i}/orders`);
  const churned = new ParkedTable();
  for (const k of keys) churned.set(k, 1, 1_800_000_000_000);
  const once = churned.bytes() / K;
  const t0 = performance.now();
  for (let c = 0; c < CYCLES; c++) {
    const k = keys[c % K]!;
    churned.delete(k);
    churned.set(k, c + 1, 1_800_000_000_000 + c);
  }
  const ns = ((performance.now() - t0) * 1e6) / CYCLES;
  if (churned.size !== K) throw new Error('lost keys');
  const after = churned.bytes() / K;
  const keep: Rules<{ n: number }, never> = {
    initial: () => ({ n: 0 }),
    apply: (st) => ({ n: st.n + 1 }),
    retired: () => false,
  };
  const core = new ShardCore(keep, { nowMs: 0, maxLoadedKeys: 1_000 });
  const live = Array.from({ length: 2_000 }, (_, i) => `tenant-${i}/orders`);
  let lsn = 0;
  let at10k = 0;
  let most = 0;
  while (lsn < 800_000) {
    core.apply(++lsn, { key: live[(lsn * 7) % live.length]!, at: lsn, type: 'tick' });
    if (lsn === 10_000) at10k = core.parkedBytes();
    if (lsn > 10_000) most = Math.max(most, core.parkedBytes());
  }
  console.log(`\nbench/shard (c): churn of parked keys`);
  console.log('| measure | baseline | after churn | ratio |');
  console.log('|---|---:|---:|---:|');
  console.log(
    `| ParkedTable bytes per parked key (${fmtN(K)} keys): parked once, then after ${fmtN(CYCLES)} park/unpark cycles (${ns.toFixed(0)} ns a cycle) | ${once.toFixed(1)} | ${after.toFixed(1)} | ${(after / once).toFixed(2)} |`,
  );
  console.log(
    `| ShardCore parkedBytes(), 2,000 keys over maxLoadedKeys 1,000: after 10,000 records, then the most over 800,000 | ${fmtN(at10k)} | ${fmtN(most)} (end: ${fmtN(core.parkedBytes())}) | ${(most / at10k).toFixed(2)} |`,
  );
}
