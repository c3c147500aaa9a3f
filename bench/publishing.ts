/**
 * bench/publishing: what goes out of an app — `.publishTo(topic)` and `.replies()` / `app.request` — on one Kafka
 * broker (started by scripts/kafka/start.mjs unless KAFKA_BROKERS is set), each beside a raw kafkajs loop doing
 * the same work, measured in the same run (the sides are in bench/publishing-sides.ts).
 *
 *  (1) consume → transform → publish: N small JSON messages `{ id, n }`, keyed by id, preloaded on a topic of P
 *      partitions, drained into `{ id, doubled: n * 2 }` on an output topic of P partitions (keyed by id).
 *      Sluice: `subscriber(in, transform).publishTo(out).workers(WORKERS)`, an input counted done once the broker
 *      acknowledged its output. Raw: kafkajs `eachBatch` over the partitions at once, which per fetched batch
 *      decodes, transforms, sends all its outputs in one `producer.send`, then resolves the batch's offsets
 *      (auto-commit): at least once. Rate from the first message handled to the time the output topic's
 *      high-water offsets (asked every 10 ms) add up to N; beside it this process's CPU per message.
 *  (2) request/reply, a requests topic of P partitions and a replies topic of one. Sluice: a replier app
 *      (`subscriber(requests, q => ({ id, ok: true })).replies().workers(REPLY_WORKERS)`) and a requester app
 *      calling `app.request`, each its own KafkaBroker. Raw: a requester producing with correlation-id and
 *      reply-to headers — the requests made in one turn in one `producer.send` (BENCH_RAW_COALESCE=0: a send
 *      each) — and reading the replies topic, matching by correlation id; a responder consumer (`eachBatch`, one
 *      send of all a batch's replies). (a) requests issued at RATE/s for SECONDS s (a 5 ms timer catching up to
 *      the schedule), p50 and p99 from issue to reply; (b) CONCURRENCY callers, each awaiting its reply before
 *      the next, for SECONDS s: requests/s.
 * Consumers on both sides fetch with maxWaitTimeInMs 100. Rounds alternate raw and Sluice; figures are medians
 * of rounds, ratios those of the same round (throughput Sluice/raw, latency raw/Sluice: above 1, Sluice is
 * faster).
 *
 *   npm run bench:publishing
 *   BENCH_CLIENT=platformatic npm run bench:publishing   (Sluice on @platformatic/kafka, KIP-848; `classic`: its
 *   classic protocol; the raw loops stay kafkajs)
 *   BENCH_ROUNDS=5 BENCH_N=100000 BENCH_SECONDS=10 BENCH_WORKERS=1024 BENCH_PART=1 npm run bench:publishing
 */
import { loadavg } from 'node:os';
import { fmt, median, range } from './stats.js';
import {
  CLIENT,
  admin,
  brokers,
  drainRaw,
  drainSluice,
  preload,
  rawRequests,
  sleep,
  sluiceRequests,
  type Drain,
  type Requester,
} from './publishing-sides.js';

const P = Number(process.env.BENCH_PARTITIONS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const N = Number(process.env.BENCH_N ?? 50_000);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 256);
const REPLY_WORKERS = Number(process.env.BENCH_REPLY_WORKERS ?? 128);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const RATE = Number(process.env.BENCH_RATE ?? 1_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const RAW_COALESCE = process.env.BENCH_RAW_COALESCE !== '0';
/** `1` or `2` to run one part only. */
const PART = process.env.BENCH_PART;

const ms = (x: number): string => x.toFixed(1);
const ratio = (x: number): string => x.toFixed(2);
const pct = (xs: readonly number[], q: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** Alternates the order of `raw` and `sluice` by round: raw first in rounds 1, 3, … */
async function sideBySide<T>(round: number, raw: () => Promise<T>, sluice: () => Promise<T>) {
  if (round % 2 === 0) {
    const r = await raw();
    return { raw: r, sluice: await sluice() };
  }
  const s = await sluice();
  return { raw: await raw(), sluice: s };
}

const load = (): string => loadavg()[0]!.toFixed(1);

console.log(
  `\nbench/publishing: Sluice on ${CLIENT}; ${P} partitions; (1) ${fmt(N)} messages, Sluice workers(${WORKERS}); (2) replier workers(${REPLY_WORKERS}), ${fmt(RATE)}/s and ${CONCURRENCY} callers for ${SECONDS} s each, raw requests ${RAW_COALESCE ? 'coalesced by turn' : 'a send each'}; ${ROUNDS} rounds, node ${process.version}, kafka at ${brokers}, 1-minute load ${load()}\n`,
);

// ---- (1) consume → transform → publish ----

const drains: { raw: Drain; sluice: Drain }[] = [];
if (PART === undefined || PART === '1') {
  const input = await preload(P, N);
  for (let round = 0; round < ROUNDS; round++) {
    const d = await sideBySide(
      round,
      () => drainRaw(input, P, N),
      () => drainSluice(input, P, N, WORKERS),
    );
    drains.push(d);
    console.log(
      `  (1) round ${round + 1}: raw ${fmt(d.raw.rate)}/s (${ms(d.raw.cpuUs)} µs CPU a message), Sluice ${fmt(d.sluice.rate)}/s (${ms(d.sluice.cpuUs)} µs), ratio ${ratio(d.sluice.rate / d.raw.rate)}`,
    );
  }
  await admin.deleteTopics({ topics: [input] }).catch(() => undefined);
}

// ---- (2) request/reply ----

interface Latency {
  readonly times: number[];
  /** Requests issued per second, as achieved. */
  readonly rate: number;
}

async function latency(side: Requester): Promise<Latency> {
  const times: number[] = [];
  const pending: Promise<unknown>[] = [];
  const t0 = performance.now();
  const total = RATE * SECONDS;
  let issued = 0;
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE));
      for (; issued < due; issued++) {
        const at = performance.now();
        pending.push(side.request(issued).then(() => times.push(performance.now() - at)));
      }
      if (issued >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  const rate = total / ((performance.now() - t0) / 1000);
  await Promise.all(pending);
  return { times, rate };
}

async function throughput(side: Requester): Promise<number> {
  let count = 0;
  const t0 = performance.now();
  const deadline = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) await side.request(count++);
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

interface Round {
  readonly lat: Latency;
  readonly tput: number;
}

async function measure(side: Requester): Promise<Round> {
  const lat = await latency(side);
  await sleep(500);
  const tput = await throughput(side);
  await sleep(500);
  return { lat, tput };
}

const rounds: { raw: Round; sluice: Round }[] = [];
if (PART === undefined || PART === '2') {
  const raw = await rawRequests(P, RAW_COALESCE);
  const sluice = await sluiceRequests(P, REPLY_WORKERS);
  for (let round = 0; round < ROUNDS; round++) {
    const r = await sideBySide(
      round,
      () => measure(raw),
      () => measure(sluice),
    );
    rounds.push(r);
    const p = (x: Round, q: number): string => ms(pct(x.lat.times, q));
    console.log(
      `  (2) round ${round + 1}: latency raw p50 ${p(r.raw, 0.5)} p99 ${p(r.raw, 0.99)} ms, Sluice p50 ${p(r.sluice, 0.5)} p99 ${p(r.sluice, 0.99)} ms; throughput raw ${fmt(r.raw.tput)}/s, Sluice ${fmt(r.sluice.tput)}/s, ratio ${ratio(r.sluice.tput / r.raw.tput)}`,
    );
  }
  await sluice.close();
  await raw.close();
}

// ---- the tables ----

if (drains.length > 0) {
  const ratios = drains.map((d) => d.sluice.rate / d.raw.rate);
  const med = (f: (d: { raw: Drain; sluice: Drain }) => number): number => median(drains.map(f));
  console.log(
    `\n(1) consume → transform → publish, ${fmt(N)} messages over ${P} partitions (median of ${ROUNDS} rounds; ratio Sluice/raw of the same round)\n`,
  );
  console.log('| loop | msgs/s | CPU µs a message (this process) | ratio Sluice/raw | range of ratios |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(
    `| raw kafkajs eachBatch, one send a batch | ${fmt(med((d) => d.raw.rate))} | ${ms(med((d) => d.raw.cpuUs))} | 1.00 | |`,
  );
  console.log(
    `| Sluice \`.publishTo(out).workers(${WORKERS})\` | ${fmt(med((d) => d.sluice.rate))} | ${ms(med((d) => d.sluice.cpuUs))} | ${ratio(median(ratios))} | ${range(ratios)} |`,
  );
}

if (rounds.length > 0) {
  const med = (f: (x: { raw: Round; sluice: Round }) => number): number => median(rounds.map(f));
  const at = (x: Round, q: number): number => pct(x.lat.times, q);
  const tputRatios = rounds.map((x) => x.sluice.tput / x.raw.tput);
  const p50Ratios = rounds.map((x) => at(x.raw, 0.5) / at(x.sluice, 0.5));
  const p99Ratios = rounds.map((x) => at(x.raw, 0.99) / at(x.sluice, 0.99));
  console.log(
    `\n(2) request/reply (median of ${ROUNDS} rounds; ratios of the same round: latency raw/Sluice and throughput Sluice/raw, above 1 Sluice is better)\n`,
  );
  console.log(
    `| side | requests a round at ${fmt(RATE)}/s | p50 ms | p99 ms | ${CONCURRENCY} callers: req/s | p50 raw/Sluice | p99 raw/Sluice | req/s Sluice/raw |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const [label, side] of [
    ['raw kafkajs', 'raw'],
    ['Sluice `app.request` / `.replies()`', 'sluice'],
  ] as const) {
    const mine = (x: { raw: Round; sluice: Round }): Round => x[side];
    const isRaw = side === 'raw';
    console.log(
      `| ${label} | ${fmt(med((x) => mine(x).lat.times.length))} | ${ms(med((x) => at(mine(x), 0.5)))} | ${ms(med((x) => at(mine(x), 0.99)))} | ${fmt(med((x) => mine(x).tput))} | ${isRaw ? '1.00' : `${ratio(median(p50Ratios))} (${range(p50Ratios)})`} | ${isRaw ? '1.00' : `${ratio(median(p99Ratios))} (${range(p99Ratios)})`} | ${isRaw ? '1.00' : `${ratio(median(tputRatios))} (${range(tputRatios)})`} |`,
    );
  }
}

console.log(`\n1-minute load at the end: ${load()}`);
await admin.disconnect();
