/**
 * bench/kafka-send: `app.send` from any instance, on one Kafka broker (started by scripts/kafka/start.mjs unless
 * KAFKA_BROKERS is set), beside a raw kafkajs request/reply loop measured in the same run.
 *
 * Sluice: two in-process instances of one app (each its own KafkaBroker and `kafkaStore({ ownership: 'partition',
 * shards: P })`, one prefix, one consumer group), a paced subscriber `batch: { wait: '1 hour' }` on a topic of P
 * partitions (ManualClock: no window closes). Every send is issued on instance A, over KEYS keys, each with an
 * eventId of its own: a key whose partition A owns is appended there (local); any other goes to B through
 * `<prefix>.requests` and its receipt comes back on `<prefix>.replies` (routed). A's shards are known by
 * wrapping its store's `openShard`/`closeShard`; a key's partition is `KafkaBroker.partitionOf` (murmur2).
 *
 * Raw: a requester producing `{ id, key, event }` (the default partitioner: murmur2 on the key) to a requests
 * topic of P partitions — the requests made in one turn in one produce request, as Sluice's KafkaBroker
 * sends them (BENCH_RAW_COALESCE=0: a produce each) — and reading a replies topic of one partition (its own
 * group), matching replies by id; two responder consumers in one group (as the two instances), eachBatch
 * without auto-commit, which per batch send each request's bytes to the changelog topic's partition in one
 * transaction (a transactional producer per responder and partition, acks -1) with the requests' offsets
 * (sendOffsets), commit it, then send one reply per request to the replies topic in one produce. Every raw
 * send is routed (the raw loop has no local path). Consumers on both sides fetch with maxWaitTimeInMs 100
 * (the tests' KafkaBroker setting, `consumer.maxWaitTimeMs: 100`).
 *
 *  (1) latency: sends issued at RATE/s for SECONDS s (issued by a 5 ms timer, catching up to the schedule);
 *      p50 and p99 of each send's time from issue to resolve, local and routed apart.
 *  (2) throughput: CONCURRENCY loops, each awaiting its send before the next, for SECONDS s; sends/s. Then
 *      again with every Sluice send to a key of B's partitions (all routed), beside the raw loop measured
 *      again.
 * Rounds alternate raw and Sluice; figures are medians of rounds, ratios those of the same round.
 *
 *   npm run bench:kafka-send
 *   BENCH_ROUNDS=5 BENCH_SECONDS=10 BENCH_RATE=1000 BENCH_CONCURRENCY=100 npm run bench:kafka-send
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kafka, Partitioners, logLevel, type Consumer, type Message, type Producer } from 'kafkajs';
import { App, ManualClock, silentLogger, subscriber, type Store } from '../src/index.js';
import { KafkaBroker, kafkaStore } from '../src/brokers/kafka/index.js';
import { PRODUCER_RETRY } from '../src/brokers/kafka/transactional-producer.js';
import { fmt, median, range } from './stats.js';

const P = Number(process.env.BENCH_PARTITIONS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 1_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const KEYS = Number(process.env.BENCH_KEYS ?? 100_000);
const RAW_COALESCE = process.env.BENCH_RAW_COALESCE !== '0';
const MAX_WAIT_MS = 100;
const NAME = 'send';
const T0 = 1_800_000_000_000;

const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const unique = (what: string): string => `bench-${what}-${randomBytes(4).toString('hex')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function createTopic(topic: string, partitions: number): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
}

/**
 * A send: resolves once answered; `local` says whether it was appended on the sending instance. `routed`
 * asks for a key that the sending instance does not own (every raw send is routed).
 */
interface Side {
  send(n: number, routed?: boolean): { local: boolean; done: Promise<unknown> };
  close(): Promise<void>;
}

let sent = 0;
const keyOf = (n: number): string => `customer-${n % KEYS}`;
const eventOf = (n: number) => ({ n, amount: 1999, note: 'x'.repeat(32) });

// ---- Sluice ----

async function sluiceSide(): Promise<Side> {
  const topic = unique('send-topic');
  await createTopic(topic, P);
  const name = unique('send-app');
  const prefix = unique('send-store');
  const owned = new Set<number>();
  const holder = new Map<number, 'a' | 'b'>();
  const owner = (label: 'a' | 'b'): number[] => [...holder].filter(([, l]) => l === label).map(([shard]) => shard);
  const instance = (label: 'a' | 'b'): { app: App; broker: KafkaBroker } => {
    const store: Store = kafkaStore({
      brokers: [brokers],
      prefix,
      shards: P,
      replicationFactor: 1,
      ownership: 'partition',
      logger: silentLogger,
    });
    // Which instance holds a shard: the last that opened it (the next owner's openShard fences the last one's).
    const open = store.openShard!.bind(store);
    store.openShard = async (shard) => {
      const log = await open(shard);
      holder.set(shard, label);
      return log;
    };
    const broker = new KafkaBroker({
      brokers: [brokers],
      logger: silentLogger,
      consumer: {
        maxWaitTimeMs: MAX_WAIT_MS,
        heartbeatIntervalMs: 300,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 15_000,
      },
    });
    const app = new App({ name, logger: silentLogger, store, clock: new ManualClock(T0), shutdownTimeoutMs: 10_000 });
    app.withBroker(broker, (b) =>
      b.include(
        subscriber(topic, () => {
          throw new Error('no window may close during the measurement');
        })
          .name(NAME)
          .pace({ batch: { wait: '1 hour' } })
          .build(),
      ),
    );
    return { app, broker };
  };
  const a = instance('a');
  const b = instance('b');
  await a.app.start();
  await b.app.start();
  for (let i = 0; !(owner('a').length > 0 && owner('b').length > 0); i++) {
    if (i > 600) throw new Error(`the shards did not settle: a ${owner('a').join(',')}, b ${owner('b').join(',')}`);
    await sleep(100);
  }
  await sleep(1_000); // the handover's tail
  for (const s of owner('a')) owned.add(s);
  console.log(`  Sluice: instance A owns shards ${owner('a').join(', ')}, B ${owner('b').join(', ')}`);
  return {
    send(n, routed = false) {
      let k = n;
      while (routed && owned.has(a.broker.partitionOf(keyOf(k), P))) k++;
      const key = keyOf(k);
      const local = owned.has(a.broker.partitionOf(key, P));
      return { local, done: a.app.send(NAME, { key, event: eventOf(n), eventId: `e-${n}` }) };
    },
    async close() {
      await a.app.stop();
      await b.app.stop();
      await a.broker.close();
      await b.broker.close();
      await admin
        .deleteTopics({
          topics: [topic, ...['changelog', 'snapshots', 'requests', 'replies'].map((t) => `${prefix}.${t}`)],
        })
        .catch(() => undefined);
    },
  };
}

// ---- raw ----

async function rawSide(): Promise<Side> {
  const requests = unique('raw-requests');
  const replies = unique('raw-replies');
  const changelog = unique('raw-changelog');
  await createTopic(requests, P);
  await createTopic(replies, 1);
  await createTopic(changelog, P);
  const group = unique('raw-responders');
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const waiting = new Map<string, () => void>();
  const consumers: Consumer[] = [];
  const producers: Producer[] = [producer];
  let joined = 0;

  const replyConsumer = kafka.consumer({ groupId: unique('raw-requester'), maxWaitTimeInMs: MAX_WAIT_MS });
  consumers.push(replyConsumer);
  replyConsumer.on(replyConsumer.events.GROUP_JOIN, () => joined++);
  await replyConsumer.connect();
  await replyConsumer.subscribe({ topic: replies, fromBeginning: true });
  await replyConsumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        const { id } = JSON.parse(m.value!.toString()) as { id: string };
        const resolve = waiting.get(id);
        waiting.delete(id);
        resolve?.();
      }
    },
  });

  for (let r = 0; r < 2; r++) {
    const replier = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await replier.connect();
    const txns = Array.from({ length: P }, (_, p) =>
      kafka.producer({
        transactionalId: `${changelog}-r${r}-p${p}`,
        idempotent: true,
        maxInFlightRequests: 1,
        retry: PRODUCER_RETRY,
      }),
    );
    await Promise.all(txns.map((t) => t.connect()));
    producers.push(replier, ...txns);
    const consumer = kafka.consumer({
      groupId: group,
      maxWaitTimeInMs: MAX_WAIT_MS,
      heartbeatInterval: 300,
      sessionTimeout: 10_000,
      rebalanceTimeout: 15_000,
    });
    consumers.push(consumer);
    consumer.on(consumer.events.GROUP_JOIN, () => joined++);
    await consumer.connect();
    await consumer.subscribe({ topic: requests, fromBeginning: true });
    await consumer.run({
      partitionsConsumedConcurrently: P,
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return;
        const next = String(Number(batch.messages[batch.messages.length - 1]!.offset) + 1);
        const txn = await txns[batch.partition]!.transaction();
        await txn.send({
          topic: changelog,
          acks: -1,
          messages: batch.messages.map((m) => ({ partition: batch.partition, value: m.value })),
        });
        // The requests' offsets committed with their records, in the transaction.
        await txn.sendOffsets({
          consumerGroupId: group,
          topics: [{ topic: requests, partitions: [{ partition: batch.partition, offset: next }] }],
        });
        await txn.commit();
        await replier.send({
          topic: replies,
          messages: batch.messages.map((m) => {
            const { id } = JSON.parse(m.value!.toString()) as { id: string };
            return { partition: 0, value: JSON.stringify({ id, offset: m.offset }) };
          }),
        });
      },
    });
  }
  // Three joins at least (the requester's, then both responders', the first one again on the rebalance).
  for (let i = 0; joined < 4 && i < 300; i++) await sleep(100);
  await sleep(1_000);
  // A warm-up request per partition, so that the first figures carry no connection setup.
  const warm = (n: number): Promise<unknown> => side.send(n).done;
  // The requests made in one turn, sent in one produce request (BENCH_RAW_COALESCE=0: one each).
  let queued: Message[] = [];
  const flush = (): void => {
    const messages = queued;
    queued = [];
    void producer.send({ topic: requests, messages });
  };
  const side: Side = {
    send(n) {
      const id = `r-${n}`;
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      const message = { key: keyOf(n), value: JSON.stringify({ id, key: keyOf(n), event: eventOf(n) }) };
      if (!RAW_COALESCE) void producer.send({ topic: requests, messages: [message] });
      else if (queued.push(message) === 1) setImmediate(flush);
      return { local: false, done };
    },
    async close() {
      await Promise.all(consumers.map((c) => c.disconnect()));
      await Promise.all(producers.map((p) => p.disconnect()));
      await admin.deleteTopics({ topics: [requests, replies, changelog] }).catch(() => undefined);
    },
  };
  await Promise.all(Array.from({ length: 64 }, () => warm(sent++)));
  return side;
}

// ---- the measurements ----

const pct = (xs: readonly number[], q: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

interface Latency {
  readonly local: number[];
  readonly routed: number[];
  /** Sends issued per second, as achieved. */
  readonly rate: number;
}

async function latency(side: Side): Promise<Latency> {
  const local: number[] = [];
  const routed: number[] = [];
  const pending: Promise<unknown>[] = [];
  const t0 = performance.now();
  const total = RATE * SECONDS;
  let issued = 0;
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * RATE));
      for (; issued < due; issued++) {
        const at = performance.now();
        const { local: isLocal, done } = side.send(sent++);
        pending.push(done.then(() => (isLocal ? local : routed).push(performance.now() - at)));
      }
      if (issued >= total) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  const rate = total / ((performance.now() - t0) / 1000);
  await Promise.all(pending);
  return { local, routed, rate };
}

async function throughput(side: Side, routed = false): Promise<Throughput> {
  let count = 0;
  let local = 0;
  const t0 = performance.now();
  const deadline = t0 + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const s = side.send(sent++, routed);
        await s.done;
        count++;
        if (s.local) local++;
      }
    }),
  );
  return { rate: count / ((performance.now() - t0) / 1000), local, routed: count - local };
}

interface Throughput {
  readonly rate: number;
  readonly local: number;
  readonly routed: number;
}

interface Round {
  readonly lat: Latency;
  readonly tput: Throughput;
  /** Every send to a key the sending instance does not own. */
  readonly routedTput: Throughput;
}

async function measure(side: Side): Promise<Round> {
  const lat = await latency(side);
  await sleep(500);
  const tput = await throughput(side);
  await sleep(500);
  const routedTput = await throughput(side, true);
  await sleep(500);
  return { lat, tput, routedTput };
}

console.log(
  `\nbench/kafka-send: ${P} partitions, ${fmt(KEYS)} keys, ${fmt(RATE)}/s for ${SECONDS} s, ${CONCURRENCY} concurrent senders for ${SECONDS} s, ${ROUNDS} rounds, node ${process.version}, kafka at ${brokers}\n`,
);
const sluice = await sluiceSide();
const raw = await rawSide();
// Sluice's warm-up: a few sends of each kind.
await Promise.all(Array.from({ length: 64 }, () => sluice.send(sent++).done));

const rounds: { raw: Round; sluice: Round }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  let r: Round;
  let s: Round;
  if (round % 2 === 0) {
    r = await measure(raw);
    s = await measure(sluice);
  } else {
    s = await measure(sluice);
    r = await measure(raw);
  }
  rounds.push({ raw: r, sluice: s });
  const ms = (x: number): string => x.toFixed(1);
  console.log(
    `  round ${round + 1}: latency raw p50 ${ms(pct(r.lat.routed, 0.5))} p99 ${ms(pct(r.lat.routed, 0.99))} ms; Sluice local p50 ${ms(pct(s.lat.local, 0.5))} p99 ${ms(pct(s.lat.local, 0.99))} (${s.lat.local.length}), routed p50 ${ms(pct(s.lat.routed, 0.5))} p99 ${ms(pct(s.lat.routed, 0.99))} (${s.lat.routed.length}); throughput raw ${fmt(r.tput.rate)}/s, Sluice ${fmt(s.tput.rate)}/s (${fmt(s.tput.local)} local, ${fmt(s.tput.routed)} routed), ratio ${(s.tput.rate / r.tput.rate).toFixed(2)}; routed only raw ${fmt(r.routedTput.rate)}/s, Sluice ${fmt(s.routedTput.rate)}/s, ratio ${(s.routedTput.rate / r.routedTput.rate).toFixed(2)}`,
  );
}

const med = (f: (x: { raw: Round; sluice: Round }) => number): number => median(rounds.map(f));
const ms = (x: number): string => x.toFixed(1);
const ratio = (x: number): string => x.toFixed(x < 0.1 ? 3 : 2);
const rawP50 = (x: { raw: Round }) => pct(x.raw.lat.routed, 0.5);
const rawP99 = (x: { raw: Round }) => pct(x.raw.lat.routed, 0.99);
const rows: [string, (x: { sluice: Round }) => number[]][] = [
  ['Sluice, local sends (appended on A)', (x) => x.sluice.lat.local],
  ['Sluice, routed sends (A → requests → B → replies)', (x) => x.sluice.lat.routed],
  ['Sluice, all sends', (x) => [...x.sluice.lat.local, ...x.sluice.lat.routed]],
];
console.log(
  `\n(1) latency at ${fmt(RATE)} sends/s for ${SECONDS} s (median of ${ROUNDS} rounds; ratios raw/Sluice, median of the same round's)\n`,
);
console.log('| path | sends a round | p50 ms | p99 ms | raw p50 ms | raw p99 ms | p50 raw/Sluice | p99 raw/Sluice |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
console.log(
  `| raw kafkajs request/reply (every send routed) | ${fmt(med((x) => x.raw.lat.routed.length))} | ${ms(med(rawP50))} | ${ms(med(rawP99))} | | | 1.00 | 1.00 |`,
);
for (const [label, of] of rows)
  console.log(
    `| ${label} | ${fmt(med((x) => of(x).length))} | ${ms(med((x) => pct(of(x), 0.5)))} | ${ms(med((x) => pct(of(x), 0.99)))} | ${ms(med(rawP50))} | ${ms(med(rawP99))} | ${ratio(med((x) => rawP50(x) / pct(of(x), 0.5)))} | ${ratio(med((x) => rawP99(x) / pct(of(x), 0.99)))} |`,
  );
const ratios = rounds.map((x) => x.sluice.tput.rate / x.raw.tput.rate);
console.log(`\n(2) throughput, ${CONCURRENCY} concurrent senders for ${SECONDS} s (median of ${ROUNDS} rounds)\n`);
console.log('| path | sends/s | of which routed | ratio Sluice/raw (median, same round) | range of ratios |');
console.log('|---|---:|---:|---:|---:|');
console.log(`| raw kafkajs request/reply | ${fmt(med((x) => x.raw.tput.rate))} | all | 1.00 | |`);
console.log(
  `| Sluice \`app.send\` on A | ${fmt(med((x) => x.sluice.tput.rate))} | ${(100 * med((x) => x.sluice.tput.routed / (x.sluice.tput.local + x.sluice.tput.routed))).toFixed(0)}% | ${median(ratios).toFixed(2)} | ${range(ratios)} |`,
);
const routedRatios = rounds.map((x) => x.sluice.routedTput.rate / x.raw.routedTput.rate);
console.log(
  `| raw kafkajs request/reply (measured again, beside the next row) | ${fmt(med((x) => x.raw.routedTput.rate))} | all | 1.00 | |`,
);
console.log(
  `| Sluice \`app.send\` on A, keys of B's partitions only | ${fmt(med((x) => x.sluice.routedTput.rate))} | ${(100 * med((x) => x.sluice.routedTput.routed / (x.sluice.routedTput.local + x.sluice.routedTput.routed))).toFixed(0)}% | ${median(routedRatios).toFixed(2)} | ${range(routedRatios)} |`,
);

await sluice.close();
await raw.close();
await admin.disconnect();
