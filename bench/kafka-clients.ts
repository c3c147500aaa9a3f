/**
 * bench/kafka-clients: the two Kafka clients side by side, on one broker in one run (started by
 * scripts/kafka/start.mjs unless KAFKA_BROKERS is set). 300,000 messages of about 50 bytes of JSON over
 * 3 partitions, read by a fresh group each time, a no-op handler after JSON.parse; rate from the first
 * message to the last. Per round, in turn:
 *  - the Java consumer: Kafka's own ConsumerPerformance (what kafka-consumer-perf-test runs), from the
 *    broker's jars and kafka-tools (fetched with Maven), its fetch rate (join time left out, as ours is);
 *  - raw kafkajs (eachBatch), Sluice on kafkajs (sluice/kafka), workers(16);
 *  - raw @platformatic/kafka (the messages stream read in a for-await loop), Sluice on it
 *    (sluice/kafka/platformatic), workers(16), classic protocol and consumer protocol (KIP-848).
 * Each round's rates are divided by that round's raw rate of the same client and by its Java rate; the
 * medians of those ratios are the figures. @platformatic/kafka needs Node.js 22.22 or 24.6 and later.
 *
 *   PATH=~/.cache/sluice/node-24.21.0/node_modules/node/bin:$PATH npm run bench:kafka-clients
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { App, silentLogger, subscriber, type Broker } from '../src/index.js';
import { KafkaBroker } from '../src/brokers/kafka/index.js';
import { PlatformaticKafkaBroker } from '../src/brokers/platformatic/index.js';
import { Consumer as PkConsumer } from '@platformatic/kafka';

const N = Number(process.env.BENCH_N ?? 300_000);
/** `c` to run the rebalance part only. */
const PART = process.env.BENCH_PART;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const brokers =
  process.env.KAFKA_BROKERS ??
  /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { encoding: 'utf8' }))![1]!;
const kafka = new Kafka({ clientId: 'bench', brokers: [brokers], logLevel: logLevel.NOTHING });
const fresh = (what: string): string => `${what}-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/** The Java consumer's classpath: the broker's jars (scripts/kafka/start.mjs fetched them) and kafka-tools. */
function javaClasspath(): string {
  const cache = process.env.SLUICE_CACHE ?? path.join(os.homedir(), '.cache', 'sluice');
  const kafkaDir = fs.readdirSync(cache).find((d) => /^kafka-\d/.test(d));
  if (kafkaDir === undefined) throw new Error(`no Kafka under ${cache}: run scripts/kafka/start.mjs first`);
  const version = kafkaDir.slice('kafka-'.length);
  const tools = path.join(cache, `kafka-tools-${version}`);
  if (!fs.existsSync(path.join(tools, `kafka-tools-${version}.jar`))) {
    const r = spawnSync(
      'mvn',
      [
        '-q',
        '-B',
        'dependency:copy',
        `-Dartifact=org.apache.kafka:kafka-tools:${version}`,
        `-DoutputDirectory=${tools}`,
      ],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`mvn could not fetch kafka-tools ${version}: ${r.stdout}${r.stderr}`);
  }
  return `${path.join(cache, kafkaDir, 'lib', '*')}:${path.join(tools, '*')}`;
}

async function fill(topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < N; i += 10_000) {
    const messages = [];
    for (let j = i; j < Math.min(N, i + 10_000); j++)
      messages.push({ key: `k${j % 1000}`, value: JSON.stringify({ n: j, customer: `c${j % 1000}`, amount: 1999 }) });
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

function meter() {
  let count = 0;
  let first = 0;
  let resolve!: (rate: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  return {
    done,
    tick(): void {
      if (count === 0) first = performance.now();
      if (++count === N) resolve((N - 1) / ((performance.now() - first) / 1000));
    },
  };
}

function java(topic: string, classpath: string): number {
  const r = spawnSync(
    'java',
    [
      '-cp',
      classpath,
      'org.apache.kafka.tools.ConsumerPerformance',
      '--bootstrap-server',
      brokers,
      '--topic',
      topic,
      '--group',
      fresh('java'),
      '--num-records',
      String(N),
      '--timeout',
      '60000',
    ],
    { encoding: 'utf8' },
  );
  // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms,
  // fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  const row = r.stdout
    .trim()
    .split('\n')
    .pop()!
    .split(',')
    .map((s) => s.trim());
  const rate = Number(row[9]);
  if (!(rate > 0)) throw new Error(`ConsumerPerformance failed: ${r.stdout}${r.stderr}`);
  return rate;
}

async function rawKafkajs(topic: string): Promise<number> {
  const m = meter();
  const consumer = kafka.consumer({ groupId: fresh('raw'), maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 3,
    // eslint-disable-next-line @typescript-eslint/unbound-method -- a closure, though typed as a method
    eachBatch: async ({ batch, resolveOffset }) => {
      for (const message of batch.messages) {
        JSON.parse(message.value!.toString('utf8'));
        m.tick();
        resolveOffset(message.offset);
      }
    },
  });
  const rate = await m.done;
  await consumer.disconnect();
  return rate;
}

async function rawPlatformatic(topic: string): Promise<number> {
  const m = meter();
  const consumer = new PkConsumer({
    clientId: 'bench',
    bootstrapBrokers: [brokers],
    groupId: fresh('raw-pk'),
    maxWaitTime: 100,
  });
  const stream = await consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest' });
  const reading = (async () => {
    for await (const message of stream) {
      JSON.parse(message.value.toString('utf8'));
      m.tick();
    }
  })();
  const rate = await m.done;
  await stream.close();
  await reading.catch(() => {});
  await consumer.close(true);
  return rate;
}

async function sluice(topic: string, broker: Broker): Promise<number> {
  const m = meter();
  const app = new App({ name: fresh('sluice'), logger: silentLogger }).withBroker(broker, (b) =>
    b.include(
      subscriber(topic, (_value: unknown) => {
        m.tick();
      })
        .workers(16)
        .build(),
    ),
  );
  await app.start();
  const rate = await m.done;
  await app.stop();
  return rate;
}

const consumer = { maxWaitTimeMs: 100 };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
const fmt = (r: number) => Math.round(r).toLocaleString('en');

const classpath = PART === 'c' ? '' : javaClasspath();
const rows: Record<string, number>[] = [];
for (let round = 0; round < (PART === 'c' ? 0 : ROUNDS); round++) {
  const topic = fresh('bench-clients');
  await fill(topic);
  const r: Record<string, number> = {};
  r.java = java(topic, classpath);
  r.rawKafkajs = await rawKafkajs(topic);
  r.sluiceKafkajs = await sluice(topic, new KafkaBroker({ brokers: [brokers], logger: silentLogger, consumer }));
  r.rawPk = await rawPlatformatic(topic);
  r.sluicePk = await sluice(topic, new PlatformaticKafkaBroker({ brokers: [brokers], logger: silentLogger, consumer }));
  r.sluicePk848 = await sluice(
    topic,
    new PlatformaticKafkaBroker({ brokers: [brokers], logger: silentLogger, consumer, groupProtocol: 'consumer' }),
  );
  rows.push(r);
  console.error(
    `round ${round + 1}: ${JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Math.round(v)])))}`,
  );
}

const col = (k: string) => rows.map((r) => r[k]!);
const ratio = (k: string, to: string) => rows.map((r) => r[k]! / r[to]!);
if (rows.length > 0) {
  console.log(
    `bench/kafka-clients: ${N.toLocaleString('en')} messages of ~50 B, 3 partitions, ${ROUNDS} rounds, node ${process.version}, 1-minute load ${os.loadavg()[0]!.toFixed(1)}, kafka at ${brokers}`,
  );
  console.log(
    '| consumer | median messages/s | to its raw loop (median, range) | to the Java consumer (median, range) |',
  );
  console.log('|---|---:|---:|---:|');
  const line = (name: string, k: string, raw?: string) =>
    console.log(
      `| ${name} | ${fmt(median(col(k)))} | ${raw ? `${median(ratio(k, raw)).toFixed(2)} (${range(ratio(k, raw))})` : ''} | ${median(ratio(k, 'java')).toFixed(2)} (${range(ratio(k, 'java'))}) |`,
    );
  line('Java consumer (ConsumerPerformance, fetch rate)', 'java');
  line('raw kafkajs eachBatch', 'rawKafkajs');
  line('Sluice on kafkajs, workers(16)', 'sluiceKafkajs', 'rawKafkajs');
  line('raw @platformatic/kafka stream', 'rawPk');
  line('Sluice on @platformatic/kafka, workers(16), classic', 'sluicePk', 'rawPk');
  line('Sluice on @platformatic/kafka, workers(16), KIP-848', 'sluicePk848', 'rawPk');
}

/**
 * (c) a rebalance: 3 members of a group own a 6-partition topic; a 4th joins. The time from its join until
 * the 4 members own the 6 partitions once each, and how many partitions the 3 revoked (idle members: the
 * time is the protocol's own).
 */
async function rebalance(groupProtocol: 'classic' | 'consumer'): Promise<{ ms: number; revoked: number }> {
  const topic = fresh('bench-rebalance');
  const group = fresh('bench-rebalance');
  const broker = new PlatformaticKafkaBroker({
    brokers: [brokers],
    logger: silentLogger,
    groupProtocol,
    consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 500, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000 },
  });
  await broker.createTopic(topic, 6);
  let revoked = 0;
  let counting = false;
  const request = {
    topic,
    group,
    onReadable: () => {},
    onRevoke: (p: readonly number[]) => {
      if (counting) revoked += p.length;
      return Promise.resolve();
    },
  };
  const members: Awaited<ReturnType<typeof broker.consume>>[] = [];
  for (let i = 0; i < 3; i++) members.push(await broker.consume(request));
  const owned = () => members.flatMap((m) => m.assigned()).sort((a, b) => a - b);
  // Settled: each partition owned once, shared evenly (the consumer protocol reconciles step by step).
  const stable = () => {
    const sizes = members.map((m) => m.assigned().length);
    return owned().join() === '0,1,2,3,4,5' && Math.max(...sizes) - Math.min(...sizes) <= 1;
  };
  while (!stable()) await new Promise((r) => setTimeout(r, 10));
  counting = true;
  const start = performance.now();
  members.push(await broker.consume(request));
  while (!stable()) await new Promise((r) => setTimeout(r, 10));
  const ms = performance.now() - start;
  counting = false; // the close revokes everything
  await broker.close();
  return { ms, revoked };
}
for (const protocol of ['classic', 'consumer'] as const) {
  const runs = [];
  for (let round = 0; round < ROUNDS; round++) runs.push(await rebalance(protocol));
  console.log(
    `\n(c) a 4th member joins 3 on 6 partitions, ${protocol} protocol: median ${Math.round(median(runs.map((r) => r.ms)))} ms until every partition has one owner (range ${Math.round(Math.min(...runs.map((r) => r.ms)))}–${Math.round(Math.max(...runs.map((r) => r.ms)))}), partitions revoked: ${runs.map((r) => r.revoked).join(', ')}`,
  );
}
process.exit(0);
