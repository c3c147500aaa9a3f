/**
 * bench/kafka, on one Kafka broker in one run (started by scripts/kafka/start.mjs unless KAFKA_BROKERS is set):
 *  (a) 200,000 small JSON messages over 3 partitions: raw kafkajs eachBatch with a no-op handler beside Sluice
 *      workers(1) and workers(16), and workers(16) again with metrics on (a prom-client registry, scraped
 *      once a second as Prometheus would) and with tracing on (the OpenTelemetry SDK's BasicTracerProvider with
 *      no span processor: every span made and dropped; an AsyncLocalStorageContextManager registered for that
 *      run only), once more so without the context manager (the span without the async hooks' cost), and
 *      once with the SDK, the context manager and a ParentBased(TraceIdRatioBased(0.01)) sampler on a second
 *      topic like the first but for the flags of its `traceparent`s: sampled on 1 message in 100, not
 *      sampled on the others (a producer upstream that samples 1% of its traces, the consumer following its
 *      decision: 1% of the spans recorded). On the first topic every message carries a sampled
 *      `traceparent`. Rate from the first message handled to the last.
 *  (b) a handler that awaits 5 ms, one partition, 20,000 messages over 1,000 keys: raw kafkajs one at a time
 *      (eachMessage, on the first 1,000 messages: at ~200/s the whole topic would take minutes) beside Sluice
 *      workersByKey(100), against the ideal 100 / 5 ms = 20,000/s and against 100 bare loops awaiting the
 *      same 5 ms timer (what this machine's timers allow).
 *
 *   npm run bench:kafka
 *   KAFKA_BROKERS=127.0.0.1:9092 BENCH_ROUNDS=5 BENCH_PART=a npm run bench:kafka   # (a) only
 */
import { execFileSync } from 'node:child_process';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { Registry } from 'prom-client';
import { App, silentLogger, subscriber, type AppOptions, type SubscriberBuilder } from '../src/index.js';
import { KafkaBroker } from '../src/brokers/kafka/index.js';

const N_A = Number(process.env.BENCH_N ?? 200_000);
const N_B = 20_000;
const RAW_B = 1_000;
const KEYS = 1_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
/** `a` or `b` to run one part only. */
const PART = process.env.BENCH_PART;
const run = `${Date.now()}`;

const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
const noop = async (_value: unknown): Promise<void> => {};
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
/** A tracer provider that records every span and hands it to no processor. */
const sdk = new BasicTracerProvider();
/** The same, recording the spans whose parent was sampled (and 1% of the traces started here). */
const sampled = new BasicTracerProvider({
  sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }),
});
const contextManager = new AsyncLocalStorageContextManager();

async function fill(
  topic: string,
  partitions: number,
  n: number,
  key: (i: number) => string | null,
  flags: (i: number) => string = () => '01',
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
  await admin.disconnect();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < n; i += 5_000) {
    const messages = [];
    for (let j = i; j < Math.min(n, i + 5_000); j++)
      messages.push({
        key: key(j),
        value: JSON.stringify({ n: j, customer: `c${j % KEYS}`, amount: 1999 }),
        headers: { traceparent: `00-${hex(j + 1, 32)}-${hex(j + 1, 16)}-${flags(j)}` },
      });
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

/** Counts handled messages; resolves when `n` were, with the rate from the first to the last. */
function meter(n: number) {
  let count = 0;
  let first = 0;
  let resolve!: (rate: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  return {
    done,
    tick(): void {
      if (count === 0) first = performance.now();
      if (++count === n) resolve((n - 1) / ((performance.now() - first) / 1000));
    },
  };
}

async function rawBatch(topic: string, n: number): Promise<number> {
  const m = meter(n);
  const consumer = kafka.consumer({
    groupId: `raw-${topic}-${Math.random().toString(36).slice(2)}`,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 3,
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a closure, though typed as a method
    eachBatch: async ({ batch, resolveOffset }) => {
      // The hand-rolled loop a team would write: decode, await the handler, resolve.
      for (const message of batch.messages) {
        await noop(JSON.parse(message.value!.toString('utf8')));
        m.tick();
        resolveOffset(message.offset);
      }
    },
  });
  const rate = await m.done;
  await consumer.disconnect();
  return rate;
}

async function rawEachMessage(topic: string, n: number): Promise<number> {
  const m = meter(n);
  const consumer = kafka.consumer({ groupId: `raw-${topic}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      JSON.parse(message.value!.toString('utf8'));
      await sleep(5);
      m.tick();
    },
  });
  const rate = await m.done;
  await consumer.disconnect();
  return rate;
}

/** Metrics on; tracing on through the SDK, without the context manager (`bare`), or 1% sampled. */
interface Telemetry {
  registry?: Registry;
  traced?: boolean;
  bare?: boolean;
  onePercent?: boolean;
}

async function sluice(
  topic: string,
  n: number,
  configure: (b: SubscriberBuilder) => SubscriberBuilder,
  work: (value: unknown) => Promise<void>,
  telemetry: Telemetry = {},
): Promise<number> {
  const m = meter(n);
  const { registry, traced, bare, onePercent } = telemetry;
  const broker = new KafkaBroker({ brokers: [brokers], logger: silentLogger, consumer: { maxWaitTimeMs: 100 } });
  const options: Partial<AppOptions> = {
    ...(registry ? { metrics: { registry } } : {}),
    ...(traced ? { tracing: { tracerProvider: onePercent ? sampled : sdk } } : {}),
  };
  const app = new App({
    name: `sluice-${topic}-${Math.random().toString(36).slice(2)}`,
    logger: silentLogger,
    ...options,
  }).withBroker(broker, (b) =>
    b.include(
      configure(
        subscriber(topic, async (value: unknown) => {
          await work(value);
          m.tick();
        }),
      ).build(),
    ),
  );
  // Traced, with the context manager (its async hooks) for this run only, as an app with tracing has it.
  if (traced && !bare) context.setGlobalContextManager(contextManager.enable());
  await app.start();
  // With metrics, scraped once a second meanwhile (a scrape asks the broker for the partitions' lag).
  const scraping = registry ? setInterval(() => void registry.metrics(), 1_000) : undefined;
  const rate = await m.done;
  clearInterval(scraping);
  await app.stop();
  if (traced && !bare) context.disable();
  return rate;
}

async function bareTimers(lanes: number, each: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let i = 0; i < each; i++) await sleep(5);
    }),
  );
  return (lanes * each) / ((performance.now() - t0) / 1000);
}

const fmt = (r: number) => Math.round(r).toLocaleString('en');
const topicA = `bench-a-${run}`;
const topicA1 = `bench-a1-${run}`;
const topicB = `bench-b-${run}`;
if (PART !== 'b') {
  await fill(topicA, 3, N_A, (i) => `c${i % KEYS}`);
  await fill(
    topicA1,
    3,
    N_A,
    (i) => `c${i % KEYS}`,
    (i) => (i % 100 === 0 ? '01' : '00'),
  );
}
if (PART !== 'a') await fill(topicB, 1, N_B, (i) => `c${i % KEYS}`);

// Rounds alternate the consumers, each reading the whole topic with a fresh group. Throughput on a shared
// 2-core machine (the broker included) swings from run to run, so each round's Sluice rates are divided by
// that round's raw rate, measured right beside them, and the median of those ratios is the figure.
const rounds: { raw: number; w1: number; w16: number; w16m: number; w16t: number; w16b: number; w16s: number }[] = [];
for (let round = 0; round < (PART === 'b' ? 0 : ROUNDS); round++) {
  const raw = await rawBatch(topicA, N_A);
  const w1 = await sluice(topicA, N_A, (b) => b.workers(1), noop);
  // workers(16) plain, with metrics and with tracing, the order turning round by round.
  const w16Of = (telemetry: Telemetry) => () =>
    sluice(telemetry.onePercent ? topicA1 : topicA, N_A, (b) => b.workers(16), noop, telemetry);
  const variants = [
    w16Of({}),
    w16Of({ registry: new Registry() }),
    w16Of({ traced: true }),
    w16Of({ traced: true, bare: true }),
    w16Of({ traced: true, onePercent: true }),
  ];
  const rates: number[] = [];
  for (let i = 0; i < variants.length; i++) {
    const v = (round + i) % variants.length;
    rates[v] = await variants[v]!();
  }
  const [w16, w16m, w16t, w16b, w16s] = rates as [number, number, number, number, number];
  rounds.push({ raw, w1, w16, w16m, w16t, w16b, w16s });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ratios = (pick: (r: (typeof rounds)[number]) => number) => rounds.map((r) => pick(r) / r.raw);
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
if (PART !== 'b') {
  console.log(
    `bench/kafka (a): ${N_A.toLocaleString('en')} messages, 3 partitions, no-op handler, ${ROUNDS} alternating rounds, node ${process.version}, kafka at ${brokers}`,
  );
  console.log('| consumer | median messages/s | median ratio to raw (same round) | range of ratios |');
  console.log('|---|---:|---:|---:|');
  console.log(`| raw kafkajs eachBatch | ${fmt(median(rounds.map((r) => r.raw)))} | 1.00 | |`);
  console.log(
    `| Sluice workers(1) | ${fmt(median(rounds.map((r) => r.w1)))} | ${median(ratios((r) => r.w1)).toFixed(2)} | ${range(ratios((r) => r.w1))} |`,
  );
  console.log(
    `| Sluice workers(16) | ${fmt(median(rounds.map((r) => r.w16)))} | ${median(ratios((r) => r.w16)).toFixed(2)} | ${range(ratios((r) => r.w16))} |`,
  );
  console.log(
    `| Sluice workers(16), metrics on | ${fmt(median(rounds.map((r) => r.w16m)))} | ${median(ratios((r) => r.w16m)).toFixed(2)} | ${range(ratios((r) => r.w16m))} |`,
  );
  console.log(
    `| Sluice workers(16), tracing on | ${fmt(median(rounds.map((r) => r.w16t)))} | ${median(ratios((r) => r.w16t)).toFixed(2)} | ${range(ratios((r) => r.w16t))} |`,
  );
  console.log(
    `| Sluice workers(16), tracing on, 1% sampled | ${fmt(median(rounds.map((r) => r.w16s)))} | ${median(ratios((r) => r.w16s)).toFixed(2)} | ${range(ratios((r) => r.w16s))} |`,
  );
  console.log(
    `| Sluice workers(16), tracing on, no context manager | ${fmt(median(rounds.map((r) => r.w16b)))} | ${median(ratios((r) => r.w16b)).toFixed(2)} | ${range(ratios((r) => r.w16b))} |`,
  );
  const onOff = rounds.map((r) => r.w16m / r.w16);
  console.log(
    `\nworkers(16) with metrics on / plain, same round: median ${median(onOff).toFixed(2)}, range ${range(onOff)}`,
  );
  const tracedOff = rounds.map((r) => r.w16t / r.w16);
  console.log(
    `workers(16) with tracing on / plain, same round: median ${median(tracedOff).toFixed(2)}, range ${range(tracedOff)}`,
  );
  const bareOff = rounds.map((r) => r.w16b / r.w16);
  console.log(
    `workers(16) with tracing on, no context manager / plain, same round: median ${median(bareOff).toFixed(2)}, range ${range(bareOff)}`,
  );
  const sampledOff = rounds.map((r) => r.w16s / r.w16);
  console.log(
    `workers(16) with tracing on, 1% sampled / plain, same round: median ${median(sampledOff).toFixed(2)}, range ${range(sampledOff)}`,
  );
}

if (PART !== 'a') {
  const rawB = await rawEachMessage(topicB, RAW_B);
  const keyed = await sluice(
    topicB,
    N_B,
    (b) => b.workersByKey(100),
    () => sleep(5),
  );
  const bare = await bareTimers(100, 200);
  console.log(
    `\nbench/kafka (b): ${N_B.toLocaleString('en')} messages, 1 partition, ${KEYS} keys, handler awaits 5 ms`,
  );
  console.log('| consumer | messages/s | ratio to ideal 20,000/s | ratio to 100 bare timer loops |');
  console.log('|---|---:|---:|---:|');
  console.log(`| 100 bare loops awaiting 5 ms (no Kafka) | ${fmt(bare)} | ${(bare / 20_000).toFixed(2)} | 1.00 |`);
  console.log(
    `| raw kafkajs eachMessage, one at a time (first ${RAW_B}) | ${fmt(rawB)} | ${(rawB / 20_000).toFixed(3)} | ${(rawB / bare).toFixed(3)} |`,
  );
  console.log(
    `| Sluice workersByKey(100) | ${fmt(keyed)} | ${(keyed / 20_000).toFixed(2)} | ${(keyed / bare).toFixed(2)} |`,
  );
}
