/**
 * bench/kafka-pace: pace on Kafka end to end, on one Kafka broker in one run (started by scripts/kafka/start.mjs
 * unless KAFKA_BROKERS is set), each figure beside a baseline measured in the same run:
 *  (a) paced intake: an App whose paced subscriber (`debounce: '1 hour'`: no window closes) reads N small keyed
 *      JSON messages from a topic of P partitions through `kafkaStore({ ownership: 'partition', shards: P })`;
 *      the figure is events made durable per second (each shard log's `append` wrapped to count the appends
 *      that resolved), from the first append to the Nth durable. Beside it raw kafkajs loops doing the same
 *      work: eachBatch (P partitions concurrently), one transactional producer per partition (transactionalId
 *      per partition) that sends each batch's message values to the partition of a changelog topic (a message
 *      each: Sluice packs its records, see docs/store.md), and commits; at most RAW_BATCH messages per
 *      transaction (2,000 by default: what Sluice's transactions carry here at most, 2,000 appends of a
 *      partition being under way; both sides' records per transaction are printed). `BENCH_RAW` picks the loops: `txn`, the offsets sent in each transaction
 *      (`sendOffsets`); `outside`, the offsets committed every second by the consumer, as Sluice commits them
 *      (its events are taken once by their offsets); `pk-txn` and `pk-outside`, the same on @platformatic/kafka
 *      (bench/raw-platformatic-intake.ts: run by default beside an app on that client). Also printed: the
 *      records per transaction on each side
 *      (the raw loop's: changelog end offsets less messages, one commit marker per transaction; Sluice's: its
 *      logs' count).
 *  (b) restore: coordinator states restored per second. The store of an App (MemoryBroker, ManualClock,
 *      `debounce: '1 hour'`) on a `kafkaStore({ ownership: 'all', shards: 4, snapshotEvery: 1_000 })` as it is
 *      left after 2 events per key over K keys (the second pass makes each shard snapshot: a host snapshots once
 *      its records since the last are twice its keys) and one more event for a tenth of the keys (a tail after
 *      the snapshot): built by bench/pace-restore-setup.ts (the app's records through ShardHosts with its pace
 *      rules, then the snapshots and the tails written by the store's own code; checked against a build by
 *      `app.send` at 4,000 keys on a memoryStore first), or with `BENCH_RESTORE_SETUP=sends` by the app itself
 *      (`app.send` from 1,000 senders: minutes at 1,000,000 keys). The figure: K / the time of a fresh App's
 *      `start()` (opens the store, reads every shard's snapshot and changelog tail, rebuilds the states).
 *      Baseline: a raw read_committed kafkajs consumer reading every partition of the same changelog and
 *      snapshots topics from start to end (eachBatch, nothing decoded), as K / its time.
 *  (c) failover: two child processes (bench/pace-failover-child.mjs, from dist/) of one app, a batch-paced
 *      subscriber (`batch: { wait: 200 }`) on a topic of P partitions, events flowing to every partition;
 *      the one owning partition 0 is SIGKILLed; the figure is the time from the kill to the first run, on the
 *      survivor, of a key of a partition the victim owned, beside the consumer session timeout it must wait
 *      for (the baseline): the difference is the rejoin, the restore and the first window.
 * Rounds alternate raw and Sluice; the figure is the median of the same-round ratios.
 *
 *   npm run bench:kafka-pace            (builds dist/ first, for the children of (c))
 *   BENCH_N=100000 BENCH_ROUNDS=5 BENCH_KEYS=100000,1000000 BENCH_PARTS=ab npm run bench:kafka-pace
 *   BENCH_PARTS=b BENCH_KEYS=1000000 BENCH_RESTORE_KEEP=1 BENCH_RESTORE_ROUNDS=0 npm run bench:kafka-pace   (prints the prefix kept)
 *   BENCH_PARTS=b BENCH_KEYS=1000000 BENCH_RESTORE_PREFIX=<it> BENCH_ONLY=sluice BENCH_ROUNDS=1 \
 *     node --cpu-prof --loader ts-node/esm bench/kafka-pace.ts   (a restore's profile, the setup not in it)
 *   BENCH_PARTS=c BENCH_DEBUG=1 npm run bench:kafka-pace   (prints the children's lines)
 *   BENCH_PARTS=a BENCH_ONLY=sluice node --cpu-prof --loader ts-node/esm bench/kafka-pace.ts   (a profile)
 *   BENCH_PARTS=a BENCH_CLIENT=platformatic npm run bench:kafka-pace   ((a) with the app on @platformatic/kafka)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Kafka, Partitioners, logLevel, type Producer } from 'kafkajs';
import { App, silentLogger, subscriber, type Broker, type ShardLog, type Store } from '../src/index.js';
import { KafkaBroker, kafkaStore } from '../src/brokers/kafka/index.js';
import { PRODUCER_RETRY } from '../src/brokers/kafka/transactional-producer.js';
import type { KafkaShardLog } from '../src/brokers/kafka/store/kafka-shard-log.js';
import { NAME, buildShards, checkBuild, restoreApp, sendRestoreStore, writeShards } from './pace-restore-setup.js';
import { fmt, median, range } from './stats.js';

const N = Number(process.env.BENCH_N ?? 100_000);
const P = Number(process.env.BENCH_PARTITIONS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS_A = Number(process.env.BENCH_KEYS_A ?? 10_000);
const RAW_BATCH = Number(process.env.BENCH_RAW_BATCH ?? 2_000);
const RESTORE_KEYS = (process.env.BENCH_KEYS ?? '100000,1000000').split(',').map(Number);
/** How (b)'s store is filled: `build` (bench/pace-restore-setup.ts) or `sends` (`app.send`, slow past 100,000 keys). */
const RESTORE_SETUP = process.env.BENCH_RESTORE_SETUP ?? 'build';
/** (b) restores the store of this prefix, kept by an earlier run (`BENCH_RESTORE_KEEP=1`), instead of making one. */
const RESTORE_PREFIX = process.env.BENCH_RESTORE_PREFIX;
const RESTORE_KEEP = process.env.BENCH_RESTORE_KEEP === '1';
const RESTORE_ROUNDS = Number(process.env.BENCH_RESTORE_ROUNDS ?? ROUNDS);
const FAILOVER_ROUNDS = Number(process.env.BENCH_FAILOVER_ROUNDS ?? ROUNDS);
const SESSION_TIMEOUT_MS = Number(process.env.BENCH_SESSION_TIMEOUT_MS ?? 6_000);
const PARTS = process.env.BENCH_PARTS ?? 'abc';
/** `raw` or `sluice`: (a) measures that side only, (b) Sluice's only (for a profile). */
const ONLY = process.env.BENCH_ONLY;
/**
 * (a)'s app reads through `kafkajs` (the default) or @platformatic/kafka (`platformatic`: KIP-848; `classic`),
 * its store on the same client (`kafkaStore`, `platformaticKafkaStore`); `BENCH_STORE_CLIENT=kafkajs` keeps the
 * store on kafkajs. @platformatic/kafka needs Node.js 22.22 or 24.6 and later.
 */
const CLIENT = process.env.BENCH_CLIENT ?? 'kafkajs';
const STORE_CLIENT = process.env.BENCH_STORE_CLIENT ?? (CLIENT === 'kafkajs' ? 'kafkajs' : 'platformatic');

const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
await admin.connect();
const unique = (what: string): string => `bench-${what}-${randomBytes(4).toString('hex')}`;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Creates `topic` and waits for its partitions' leaders. Not kafkajs's `waitForLeaders`: on a busy broker its
 * metadata request can meet UNKNOWN_TOPIC_OR_PARTITION, which it does not retry, and the run dies.
 */
async function createTopic(topic: string, partitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] });
  for (let attempt = 0; ; attempt++) {
    const led = await admin
      .fetchTopicMetadata({ topics: [topic] })
      .then(({ topics }) => topics[0]!.partitions.filter((p) => p.leader >= 0).length === partitions)
      .catch(() => false);
    if (led) return;
    if (attempt === 100) throw new Error(`topic ${topic}: no leaders after 100 tries`);
    await sleep(100);
  }
}

/** The messages past the low watermark of every partition of `topic`, and its end offsets. */
async function offsetsOf(topic: string): Promise<{ high: number; messages: number }> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return {
    high: offsets.reduce((s, o) => s + Number(o.high), 0),
    messages: offsets.reduce((s, o) => s + Number(o.high) - Number(o.low), 0),
  };
}

const deleteTopics = (topics: string[]): Promise<void> => admin.deleteTopics({ topics }).catch(() => undefined);

// ---- (a) ----

/** N messages over KEYS_A keys, each sent to the partition its key's number picks. */
async function fill(topic: string): Promise<void> {
  await createTopic(topic, P);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < N; i += 5_000) {
    const messages = [];
    for (let j = i; j < Math.min(N, i + 5_000); j++) {
      const k = j % KEYS_A;
      messages.push({
        key: `customer-${k}`,
        partition: k % P,
        value: JSON.stringify({ n: j, customer: `c${k}`, amount: 1999 }),
      });
    }
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

interface IntakeResult {
  readonly rate: number;
  readonly perTxn: number;
}

/**
 * The raw loop's offsets: `'txn'` sent in each transaction (`sendOffsets`, two more round trips a transaction:
 * AddOffsetsToTxn and TxnOffsetCommit); `'outside'` committed by the consumer every second, outside the
 * transactions, as Sluice's paced subscriber does (its events are taken once by their offsets; see
 * docs/store.md). `pk-txn` and `pk-outside`: the same on @platformatic/kafka (bench/raw-platformatic-intake.ts),
 * by default beside an app on that client.
 */
type RawOffsets = 'txn' | 'outside';
type RawPath = RawOffsets | 'pk-txn' | 'pk-outside';
const RAW_LABEL: Record<RawPath, string> = {
  txn: 'raw kafkajs: eachBatch, transactional producer per partition, send + sendOffsets + commit',
  outside: 'raw kafkajs: the same, offsets committed every second outside the transaction (as Sluice)',
  'pk-txn': 'raw @platformatic/kafka: messages stream, transactional producer per partition, send + addOffset + commit',
  'pk-outside': 'raw @platformatic/kafka: the same, offsets committed every second outside the transaction (as Sluice)',
};
const RAW_VARIANTS = (
  process.env.BENCH_RAW ?? (CLIENT === 'kafkajs' ? 'txn,outside' : 'txn,outside,pk-txn,pk-outside')
).split(',') as RawPath[];

async function rawPath(topic: string, path: RawPath): Promise<IntakeResult> {
  if (path === 'txn' || path === 'outside') return rawIntake(topic, path);
  const { rawPlatformaticIntake } = await import('./raw-platformatic-intake.js');
  const changelog = unique('raw-changelog');
  await createTopic(changelog, P);
  const seconds = await rawPlatformaticIntake({
    brokers,
    topic,
    changelog,
    groupId: unique('raw-group'),
    partitions: P,
    batch: RAW_BATCH,
    count: N,
    offsets: path === 'pk-txn' ? 'txn' : 'outside',
  });
  const { high } = await offsetsOf(changelog);
  await deleteTopics([changelog]);
  return { rate: N / seconds, perTxn: N / (high - N) };
}

async function rawIntake(topic: string, offsets: RawOffsets): Promise<IntakeResult> {
  const changelog = unique('raw-changelog');
  await createTopic(changelog, P);
  const groupId = unique('raw-group');
  const producers: Producer[] = Array.from({ length: P }, (_, p) =>
    kafka.producer({
      transactionalId: `${changelog}-p${p}`,
      idempotent: true,
      maxInFlightRequests: 1,
      retry: PRODUCER_RETRY,
      createPartitioner: Partitioners.DefaultPartitioner,
    }),
  );
  await Promise.all(producers.map((p) => p.connect()));
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let count = 0;
  let first = 0;
  let resolve!: (seconds: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  await consumer.run({
    autoCommit: offsets === 'outside',
    autoCommitInterval: 1_000,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: P,
    // eslint-disable-next-line @typescript-eslint/unbound-method -- closures, though typed as methods
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning }) => {
      if (first === 0) first = performance.now();
      const producer = producers[batch.partition]!;
      for (let i = 0; i < batch.messages.length && isRunning(); i += RAW_BATCH) {
        const chunk = batch.messages.slice(i, i + RAW_BATCH);
        const last = chunk[chunk.length - 1]!.offset;
        const txn = await producer.transaction();
        await txn.send({
          topic: changelog,
          acks: -1,
          messages: chunk.map((m) => ({ partition: batch.partition, value: m.value })),
        });
        if (offsets === 'txn')
          await txn.sendOffsets({
            consumerGroupId: groupId,
            topics: [{ topic, partitions: [{ partition: batch.partition, offset: String(Number(last) + 1) }] }],
          });
        await txn.commit();
        resolveOffset(last);
        count += chunk.length;
        if (count >= N) resolve((performance.now() - first) / 1000);
        await heartbeat();
      }
    },
  });
  const seconds = await done;
  await consumer.disconnect();
  await Promise.all(producers.map((p) => p.disconnect()));
  const { high } = await offsetsOf(changelog);
  await deleteTopics([changelog]);
  return { rate: N / seconds, perTxn: N / (high - N) }; // a message per event: the rest are commit markers
}

/** Reads every partition of `topics` from start to end (read_committed, eachBatch); returns the seconds taken. */
async function readAll(topics: string[]): Promise<number> {
  const ends = new Map<string, number>();
  for (const topic of topics)
    for (const o of await admin.fetchTopicOffsets(topic))
      if (Number(o.high) > Number(o.low)) ends.set(`${topic}/${o.partition}`, Number(o.high));
  const consumer = kafka.consumer({
    groupId: unique('raw-read'),
    readUncommitted: false,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxBytes: 64 * 1024 * 1024,
    maxWaitTimeInMs: 100,
  });
  const t0 = performance.now();
  await consumer.connect();
  await consumer.subscribe({ topics, fromBeginning: true });
  await new Promise<void>((resolve) => {
    if (ends.size === 0) resolve();
    consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
      const where = `${e.payload.topic}/${e.payload.partition}`;
      const high = ends.get(where);
      if (high !== undefined && Number(e.payload.lastOffset) >= high - 1) ends.delete(where);
      if (ends.size === 0) resolve();
    });
    void consumer.run({ autoCommit: false, eachBatch: async () => {} });
  });
  const seconds = (performance.now() - t0) / 1000;
  await consumer.disconnect();
  return seconds;
}

/** `store`, its shard logs' appends counted as they become durable; `logs` gets each shard log opened. */
function counted(store: Store, onDurable: () => void, onAppend: () => void, logs: ShardLog[] = []): Store {
  const wrap = (log: ShardLog): ShardLog => {
    logs.push(log);
    const append = log.append.bind(log);
    log.append = (record) => {
      onAppend();
      const durable = append(record);
      durable.then(onDurable, () => undefined);
      return durable;
    };
    return log;
  };
  return {
    shards: store.shards,
    ownership: store.ownership,
    snapshotEvery: store.snapshotEvery,
    open: () => store.open(),
    close: () => store.close(),
    log: (shard) => store.log(shard),
    openShard: async (shard) => wrap(await store.openShard!(shard)),
    closeShard: (shard) => store.closeShard!(shard),
  };
}

/** The broker (a)'s app reads through: `BENCH_CLIENT`'s. */
async function intakeBroker(): Promise<Broker & { close(): Promise<void> }> {
  const consumer = { maxWaitTimeMs: 100 };
  if (CLIENT === 'kafkajs') return new KafkaBroker({ brokers: [brokers], logger: silentLogger, consumer });
  const { PlatformaticKafkaBroker } = await import('../src/brokers/platformatic/index.js');
  const groupProtocol = CLIENT === 'classic' ? 'classic' : 'consumer';
  return new PlatformaticKafkaBroker({ brokers: [brokers], logger: silentLogger, consumer, groupProtocol });
}

async function sluiceIntake(topic: string): Promise<IntakeResult> {
  const prefix = unique('pace');
  const logs: ShardLog[] = [];
  let count = 0;
  let first = 0;
  let resolve!: (seconds: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  const makeStore =
    STORE_CLIENT === 'kafkajs'
      ? kafkaStore
      : (await import('../src/brokers/platformatic/index.js')).platformaticKafkaStore;
  const store = counted(
    makeStore({
      brokers: [brokers],
      prefix,
      shards: P,
      replicationFactor: 1,
      ownership: 'partition',
      logger: silentLogger,
    }),
    () => {
      if (++count === N) resolve((performance.now() - first) / 1000);
    },
    () => {
      if (first === 0) first = performance.now();
    },
    logs,
  );
  const broker = await intakeBroker();
  const app = new App({ name: unique('sluice'), logger: silentLogger, store }).withBroker(broker, (b) =>
    b.include(
      subscriber(topic, () => {
        throw new Error('no window may close during the measurement');
      })
        .name(NAME)
        .pace({ debounce: '1 hour' })
        .build(),
    ),
  );
  await app.start();
  const seconds = await done;
  await app.stop();
  await broker.close();
  await deleteTopics([`${prefix}.changelog`, `${prefix}.snapshots`]);
  // Records are packed many to a message, and those a snapshot covers deleted: the log counts its transactions.
  const transactions = logs.reduce((sum, log) => sum + (log as KafkaShardLog).appendTransactions, 0);
  return { rate: N / seconds, perTxn: N / transactions };
}

type IntakePath = RawPath | 'sluice';

/** One round: every path once, in an order that rotates with the round (or only Sluice, or only the raw loops). */
async function intakeRound(topic: string, round: number): Promise<Map<IntakePath, IntakeResult>> {
  const paths: IntakePath[] =
    ONLY === 'sluice' ? ['sluice'] : ONLY === 'raw' ? [...RAW_VARIANTS] : [...RAW_VARIANTS, 'sluice'];
  const order = paths.map((_, i) => paths[(i + round) % paths.length]!);
  const results = new Map<IntakePath, IntakeResult>();
  for (const path of order)
    results.set(path, path === 'sluice' ? await sluiceIntake(topic) : await rawPath(topic, path));
  return results;
}

const perTxn = (rs: readonly IntakeResult[]): string => median(rs.map((r) => r.perTxn)).toFixed(0);

async function partA(): Promise<void> {
  const topic = unique('intake');
  await fill(topic);
  console.log(
    `\n(a) paced intake: ${fmt(N)} messages over ${fmt(KEYS_A)} keys, ${P} partitions, raw at most ${RAW_BATCH} per transaction, median of ${ROUNDS} rounds, the app on ${CLIENT}, its store on ${STORE_CLIENT}, node ${process.version}, kafka at ${brokers}\n`,
  );
  const rounds: Map<IntakePath, IntakeResult>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = await intakeRound(topic, round);
    rounds.push(r);
    const s = r.get('sluice');
    const line = [...r]
      .map(
        ([path, x]) =>
          `${path === 'sluice' ? 'Sluice' : `raw(${path})`} ${fmt(x.rate)}/s (${x.perTxn.toFixed(0)} per txn)`,
      )
      .join(', ');
    const ratios = RAW_VARIANTS.filter((v) => s && r.has(v)).map(
      (v) => `${(s!.rate / r.get(v)!.rate).toFixed(2)} of ${v}`,
    );
    console.log(`  round ${round + 1}: ${line}${ratios.length > 0 ? `; Sluice ${ratios.join(', ')}` : ''}`);
  }
  const of = (path: IntakePath): IntakeResult[] => rounds.map((r) => r.get(path)).filter((x) => x !== undefined);
  const sluice = of('sluice');
  console.log('\n| path | events durable/s (median) | records per transaction (median) |');
  console.log('|---|---:|---:|');
  for (const v of RAW_VARIANTS)
    if (of(v).length > 0)
      console.log(`| ${RAW_LABEL[v]} | ${fmt(median(of(v).map((r) => r.rate)))} | ${perTxn(of(v))} |`);
  if (sluice.length > 0)
    console.log(
      `| Sluice paced subscriber, kafkaStore (ownership 'partition') | ${fmt(median(sluice.map((r) => r.rate)))} | ${perTxn(sluice)} |`,
    );
  if (ONLY !== undefined) return deleteTopics([topic]);
  console.log('\n| Sluice beside | ratio (median, same round) | range of ratios |');
  console.log('|---|---:|---:|');
  for (const v of RAW_VARIANTS) {
    const ratios = rounds.map((r) => r.get('sluice')!.rate / r.get(v)!.rate);
    console.log(`| ${RAW_LABEL[v]} | ${median(ratios).toFixed(2)} | ${range(ratios)} |`);
  }
  await deleteTopics([topic]);
}

// ---- (b) ----

function restoreStore(prefix: string): Store {
  return kafkaStore({
    brokers: [brokers],
    prefix,
    shards: 4,
    replicationFactor: 1,
    ownership: 'all',
    snapshotEvery: 1_000,
    logger: silentLogger,
  });
}

/** Fills the store of `prefix` by bench/pace-restore-setup.ts; returns the seconds taken. */
async function build(prefix: string, keys: number): Promise<number> {
  const t0 = performance.now();
  const shards = await buildShards(keys, 4, 1_000);
  const built = (performance.now() - t0) / 1000;
  await writeShards({ kafka, prefix, maxMessageBytes: 1_000_000, store: () => restoreStore(prefix) }, shards);
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `  ${fmt(keys)} keys: states built in ${built.toFixed(1)} s, written to Kafka in ${(seconds - built).toFixed(1)} s`,
  );
  return seconds;
}

const rawRestore = (topics: string[]): Promise<number> => readAll(topics);

/** A fresh App's `start()` on the store of `prefix`: its seconds, and those of the store's `open()` within it. */
async function sluiceRestore(prefix: string, keys: number): Promise<{ seconds: number; open: number }> {
  let replayed = 0;
  const store = restoreStore(prefix);
  const log = store.log.bind(store);
  store.log = (shard) => {
    const l = log(shard);
    const replay = l.replay.bind(l);
    l.replay = (from, visit) => replay(from, (lsn, record) => (replayed++, visit(lsn, record)));
    return l;
  };
  const open = store.open.bind(store);
  let opened = 0;
  store.open = (owner) => open(owner).then(() => void (opened = performance.now()));
  const app = restoreApp(store);
  const t0 = performance.now();
  await app.start();
  const t1 = performance.now();
  await app.stop();
  if (replayed !== Math.ceil(keys / 10)) console.log(`  (replayed ${fmt(replayed)} tail records)`);
  return { seconds: (t1 - t0) / 1000, open: (opened - t0) / 1000 };
}

async function partB(): Promise<void> {
  console.log(
    `\n(b) restore: coordinator states per second, 4 shards, median of ${RESTORE_ROUNDS} rounds, setup by ${RESTORE_SETUP}, node ${process.version}\n`,
  );
  if (RESTORE_SETUP === 'build' && RESTORE_PREFIX === undefined) await checkBuild(4_000); // built as sent
  const rows: string[] = [];
  for (const keys of RESTORE_KEYS) {
    const prefix = RESTORE_PREFIX ?? unique('restore');
    const topics = [`${prefix}.changelog`, `${prefix}.snapshots`];
    if (RESTORE_PREFIX === undefined) {
      const setup =
        RESTORE_SETUP === 'sends' ? await sendRestoreStore(restoreStore(prefix), keys) : await build(prefix, keys);
      console.log(
        `  ${fmt(keys)} keys: ${fmt(2 * keys + Math.ceil(keys / 10))} ${RESTORE_SETUP === 'sends' ? 'sends' : 'records built'} in ${setup.toFixed(1)} s (${fmt((2 * keys + keys / 10) / setup)}/s)`,
      );
    }
    const changelog = await offsetsOf(topics[0]!);
    const snapshots = await offsetsOf(topics[1]!);
    console.log(
      `  ${prefix}: changelog ${fmt(changelog.messages)} messages, snapshots ${fmt(snapshots.messages)} messages`,
    );
    const raw: number[] = [];
    const sluice: number[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < RESTORE_ROUNDS; round++) {
      if (ONLY === 'sluice') {
        const s = await sluiceRestore(prefix, keys);
        console.log(`  round ${round + 1}: Sluice start() ${s.seconds.toFixed(2)} s (open ${s.open.toFixed(2)} s)`);
        continue;
      }
      let r: number;
      let s: { seconds: number; open: number };
      if (round % 2 === 0) {
        r = await rawRestore(topics);
        s = await sluiceRestore(prefix, keys);
      } else {
        s = await sluiceRestore(prefix, keys);
        r = await rawRestore(topics);
      }
      raw.push(keys / r);
      sluice.push(keys / s.seconds);
      ratios.push(r / s.seconds);
      console.log(
        `  round ${round + 1}: raw read ${r.toFixed(2)} s, Sluice start() ${s.seconds.toFixed(2)} s (open ${s.open.toFixed(2)} s), ratio ${(r / s.seconds).toFixed(2)}`,
      );
    }
    if (RESTORE_KEEP || RESTORE_PREFIX !== undefined) console.log(`  kept ${prefix}`);
    else await deleteTopics(topics);
    if (ONLY === 'sluice' || ratios.length === 0) continue;
    rows.push(
      `| ${fmt(keys)} | ${fmt(median(raw))} | ${fmt(median(sluice))} | ${median(ratios).toFixed(2)} | ${range(ratios)} |`,
    );
  }
  console.log(
    '\n| keys | raw read_committed read of the same partitions, keys/s | Sluice start() (restore), states/s | ratio (median, same round) | range of ratios |',
  );
  console.log('|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}

// ---- (c) ----

interface Child {
  readonly label: string;
  readonly process: ChildProcess;
  readonly owns: Set<number>;
  started: boolean;
  /** Runs seen: wall time and key. */
  readonly runs: { at: number; key: string }[];
  readonly owned: Map<number, number>;
}

function spawnChild(label: string, topic: string, prefix: string, name: string, changed: () => void): Child {
  const child = spawn(
    process.execPath,
    ['bench/pace-failover-child.mjs', brokers, topic, prefix, name, String(P), String(SESSION_TIMEOUT_MS)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const c: Child = { label, process: child, owns: new Set(), started: false, runs: [], owned: new Map() };
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (process.env.BENCH_DEBUG) console.log(`  [${label}] ${line}`);
    const [what, a, b] = line.split(' ');
    if (what === 'started') c.started = true;
    else if (what === 'own') {
      c.owns.add(Number(a));
      c.owned.set(Number(a), Number(b));
    } else if (what === 'release') c.owns.delete(Number(a));
    else if (what === 'run') c.runs.push({ at: Number(a), key: b! });
    changed();
  });
  return c;
}

const partitionOfKey = (key: string): number => Number(/^p(\d+)-/.exec(key)![1]);

async function failoverRound(): Promise<{ firstRun: number; owned: number; partitions: number }> {
  const topic = unique('failover');
  const prefix = unique('failover-store');
  const name = unique('failover-app');
  await createTopic(topic, P);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  let sending = true;
  const sender = (async () => {
    for (let n = 0; sending; n++) {
      const messages = [];
      for (let p = 0; p < P; p++)
        for (let k = 0; k < 2; k++) messages.push({ key: `p${p}-k${k}`, partition: p, value: JSON.stringify({ n }) });
      await producer.send({ topic, messages });
      await sleep(20);
    }
  })();
  let wake: () => void = () => {};
  const changed = (): void => wake();
  const until = async (ok: () => boolean, what: string, ms = 120_000): Promise<void> => {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`(c) timed out waiting for ${what}`);
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), sleep(100)]);
    }
  };
  const a = spawnChild('a', topic, prefix, name, changed);
  const children = [a];
  try {
    await until(() => a.started && a.owns.size === P, 'the first instance');
    const b = spawnChild('b', topic, prefix, name, changed);
    children.push(b);
    await until(() => b.started && a.owns.size > 0 && b.owns.size > 0 && a.owns.size + b.owns.size === P, 'both');
    // Steady: every partition has a run on its owner since both took their share.
    const since = Date.now();
    await until(() => {
      const ran = new Set<number>();
      for (const c of children)
        for (const r of c.runs) if (r.at > since && c.owns.has(partitionOfKey(r.key))) ran.add(partitionOfKey(r.key));
      return ran.size === P;
    }, 'runs on every partition');
    const victim = a.owns.has(0) ? a : b;
    const survivor = victim === a ? b : a;
    const moved = [...victim.owns];
    const killedAt = Date.now();
    victim.process.kill('SIGKILL');
    const firstOn = (): { at: number } | undefined =>
      survivor.runs.find((r) => r.at > killedAt && moved.includes(partitionOfKey(r.key)));
    await until(() => firstOn() !== undefined, 'the first run on the survivor');
    await until(() => moved.every((p) => survivor.owns.has(p)), 'the survivor to own every moved partition', 30_000);
    const owned = Math.min(...moved.map((p) => survivor.owned.get(p)!));
    return { firstRun: firstOn()!.at - killedAt, owned: owned - killedAt, partitions: moved.length };
  } finally {
    sending = false;
    await sender;
    await producer.disconnect();
    for (const c of children)
      if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGTERM');
    await Promise.all(
      children.map((c) =>
        c.process.exitCode !== null || c.process.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((resolve) => c.process.once('exit', () => resolve())),
      ),
    );
    await deleteTopics([topic, `${prefix}.changelog`, `${prefix}.snapshots`]);
  }
}

async function partC(): Promise<void> {
  console.log(
    `\n(c) failover: SIGKILL of the owner of partition 0 (2 instances, ${P} partitions, batch wait 200 ms, session timeout ${fmt(SESSION_TIMEOUT_MS)} ms, heartbeat 500 ms), ${FAILOVER_ROUNDS} rounds\n`,
  );
  const rows: { firstRun: number; owned: number; partitions: number }[] = [];
  for (let round = 0; round < FAILOVER_ROUNDS; round++) {
    const r = await failoverRound();
    rows.push(r);
    console.log(
      `  round ${round + 1}: ${r.partitions} partitions moved; restored on the survivor ${fmt(r.owned)} ms after the kill, first run ${fmt(r.firstRun)} ms after it`,
    );
  }
  const first = rows.map((r) => r.firstRun);
  const owned = rows.map((r) => r.owned);
  console.log(
    '\n| measure | ms (median) | range | minus the session timeout (median) | ratio to the session timeout (median) |',
  );
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| baseline: consumer session timeout | ${fmt(SESSION_TIMEOUT_MS)} | | 0 | 1.00 |`);
  console.log(
    `| kill → moved shards restored on the survivor | ${fmt(median(owned))} | ${fmt(Math.min(...owned))}–${fmt(Math.max(...owned))} | ${fmt(median(owned) - SESSION_TIMEOUT_MS)} | ${(median(owned) / SESSION_TIMEOUT_MS).toFixed(2)} |`,
  );
  console.log(
    `| kill → first run of a moved partition's key on the survivor | ${fmt(median(first))} | ${fmt(Math.min(...first))}–${fmt(Math.max(...first))} | ${fmt(median(first) - SESSION_TIMEOUT_MS)} | ${(median(first) / SESSION_TIMEOUT_MS).toFixed(2)} |`,
  );
}

await (PARTS.includes('a') ? partA() : Promise.resolve());
await (PARTS.includes('b') ? partB() : Promise.resolve());
await (PARTS.includes('c') ? partC() : Promise.resolve());
await admin.disconnect();
