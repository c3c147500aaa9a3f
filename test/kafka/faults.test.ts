/**
 * Kafka on a bad day: a broker of the suite's own (test/kafka/fault-broker.ts) is killed, paused and
 * started again under running apps; the shared broker serves the faults that need no broker to die.
 */
import { Kafka, Partitioners, logLevel, type Admin, type Consumer } from 'kafkajs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber, type Context, type Logger } from '../../src/index.js';
import { KafkaBroker, type KafkaBrokerOptions } from '../../src/brokers/kafka/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { Counter, Gate, turns } from '../helpers.js';
import { FaultBroker, canRunOwnBroker } from './fault-broker.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';

const CI = process.env.CI === 'true';
if (kafkaBrokers && !canRunOwnBroker) console.warn('skipping the Kafka fault tests: no java on PATH to run a broker of their own');

type Entry = { level: 'debug' | 'info' | 'warn' | 'error'; message: string; fields: Record<string, unknown> };

/** A logger that keeps what it is told, and counts it: what a test of logging waits on and looks at. */
function recordingLogger(): Logger & { entries: Entry[]; count: Counter } {
  const entries: Entry[] = [];
  const count = new Counter();
  const make = (bound: Record<string, unknown>): Logger => {
    const at = (level: Entry['level']) => (message: string, fields?: Record<string, unknown>) => {
      entries.push({ level, message, fields: { ...bound, ...fields } });
      count.add();
    };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => make({ ...bound, ...more }) };
  };
  return Object.assign(make({}), { entries, count });
}

/** Lets `touch` see (and change) every kafkajs consumer `broker` makes, before it is used. */
function eachConsumer(broker: KafkaBroker, touch: (consumer: Consumer) => void): void {
  const make = broker.kafka.consumer.bind(broker.kafka);
  broker.kafka.consumer = (config) => {
    const consumer = make(config);
    touch(consumer);
    return consumer;
  };
}

const plain = (address: string) => new Kafka({ clientId: 'plain', brokers: [address], logLevel: logLevel.NOTHING, retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 } });

async function withAdmin<T>(address: string, use: (a: Admin) => Promise<T>): Promise<T> {
  const a = plain(address).admin();
  await a.connect();
  try {
    return await use(a);
  } finally {
    await a.disconnect();
  }
}

async function produce(address: string, topic: string, messages: { partition?: number; key?: string; value: string }[]): Promise<void> {
  const producer = plain(address).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < messages.length; i += 2_000) await producer.send({ topic, messages: messages.slice(i, i + 2_000) });
  await producer.disconnect();
}

const committedOffsets = (a: Admin, group: string, topic: string): Promise<Map<number, number>> =>
  a.fetchOffsets({ groupId: group, topics: [topic] }).then((r) => new Map(r[0]!.partitions.map((p) => [p.partition, Number(p.offset)])));
const endOffsets = (a: Admin, topic: string): Promise<Map<number, number>> => a.fetchTopicOffsets(topic).then((r) => new Map(r.map((o) => [o.partition, Number(o.high)])));

/** Asks again until `holds` says yes: waits on a state only the broker knows, for no set time. */
async function until(holds: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await holds())) await new Promise<void>((resolve) => setTimeout(resolve, 50));
}

/** The outage itself: how long the broker stays dead is the fault being tested, not a wait for something. */
const outage = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Fails if `work` has not settled once `ms` passed: a guard against a hang, far above what it should take. */
async function guard<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!kafkaBrokers)('kafka faults on the shared broker', () => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));
  afterAll(closeAll);
  const admin = kafkaBrokers ? testKafka() : undefined;

  it('a subscriber of a topic that does not exist is refused with TOPIC_MISSING, naming the topic and what to do', async () => {
    const topic = uniqueTopic('missing');
    const broker = testKafka();
    const refused = broker.consume({ topic, group: `g-${topic}`, onReadable: () => {}, onRevoke: async () => {} });
    await expect(refused).rejects.toMatchObject({ code: 'TOPIC_MISSING', message: expect.stringContaining(`topic "${topic}"`) });
    await expect(refused).rejects.toThrow(/createTopics/);
  });

  it('a commit kafkajs returned from without sending counts as not made: it is sent again, and lands', async () => {
    const topic = uniqueTopic('unsent');
    await admin!.createTopic(topic, 1);
    const group = `g-${topic}`;
    const broker = testKafka();
    // While `swallow` holds, kafkajs's commitOffsets returns as it does when its consumer is not running:
    // at once, without error, having sent nothing.
    let swallow = true;
    const swallowed = new Counter();
    eachConsumer(broker, (consumer) => {
      const commit = consumer.commitOffsets.bind(consumer);
      consumer.commitOffsets = async (offsets) => {
        if (swallow) return void swallowed.add();
        return commit(offsets);
      };
    });
    const handled = new Counter();
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) => b.include(subscriber(topic, () => void handled.add()).build()));
    apps.push(app);
    await app.start();
    for (let n = 0; n < 5; n++) await broker.publish(topic, { n });
    await handled.reach(5);
    await app.idle();
    const from = swallowed.value;
    await swallowed.reach(from + 1); // a commit of the finished watermark was swallowed
    swallow = false;
    await app.stop();
    expect(await withAdmin(kafkaBrokers!, (a) => committedOffsets(a, group, topic))).toEqual(new Map([[0, 5]]));
  });

  it('a deleted topic: the consumer backs off between restarts, and logs one error, then warnings', async () => {
    const topic = uniqueTopic('deleted');
    await admin!.createTopic(topic, 1);
    const log = recordingLogger();
    const broker = new KafkaBroker({ brokers: [kafkaBrokers!], logger: log, consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 15_000, commitIntervalMs: 200 } });
    const app = new App({ name: `g-${topic}`, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) => b.include(subscriber(topic, () => {}).build()));
    apps.push(app);
    await app.start();
    await broker.publish(topic, { n: 0 });
    await app.idle();
    await withAdmin(kafkaBrokers!, (a) => a.deleteTopics({ topics: [topic] }));
    const crashes = () => log.entries.filter((e) => /^kafka consumer crashed/.test(e.message));
    await until(() => crashes().length >= 3);
    const seen = crashes().slice(0, 3);
    expect(seen.map((e) => e.level)).toEqual(['error', 'warn', 'warn']);
    expect(seen.map((e) => e.fields.restartInMs)).toEqual([1_000, 2_000, 4_000]);
    expect(seen[0]!.fields.hint).toMatch(topic);
    // kafkajs restarts nothing itself, and its own crash lines (with their stacks) are not errors.
    expect(log.entries.filter((e) => /Restarting the consumer/.test(e.message))).toEqual([]);
    expect(log.entries.filter((e) => e.level === 'error' && /^Crash/.test(e.message))).toEqual([]);
    await app.stop();
    await broker.close();
  }, 40_000);
});

describe.skipIf(!kafkaBrokers || !canRunOwnBroker)('kafka on a broker that dies', () => {
  const fault = new FaultBroker(19194);
  const made: KafkaBroker[] = [];
  afterAll(async () => {
    await Promise.all(made.map((b) => b.close()));
    fault.stop();
  });
  const options = (extra: Partial<KafkaBrokerOptions> = {}): KafkaBrokerOptions => ({
    brokers: [`127.0.0.1:${fault.port}`],
    logger: silentLogger,
    consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 15_000, commitIntervalMs: 200 },
    ...extra,
  });
  const kafka = (extra?: Partial<KafkaBrokerOptions>) => {
    const b = new KafkaBroker(options(extra));
    made.push(b);
    return b;
  };

  it('a connect that failed (no broker yet) is tried again by the next one', async () => {
    await fault.kill(); // one left from an earlier run
    const broker = kafka({ kafkajs: { retry: { retries: 0 }, connectionTimeout: 300 } });
    await expect(broker.connect()).rejects.toThrow();
    await fault.start(true);
    await broker.connect();
    await broker.createTopic(uniqueTopic('after-failed-connect'), 1);
  }, 120_000);

  it.todo('placeholder');
});
