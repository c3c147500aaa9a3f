/**
 * Kafka-specific behaviour beyond the broker contract, against the real broker.
 */
import { execFileSync } from 'node:child_process';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App, ManualClock, memoryStore, silentLogger, subscriber, type Context, type KeySource } from '../../src/index.js';
import { KafkaBroker } from '../../src/brokers/kafka/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { seeded, turns } from '../helpers.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';

describe.skipIf(!kafkaBrokers)('kafka', () => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));
  afterAll(closeAll);
  const admin = kafkaBrokers ? testKafka() : undefined;
  const makeApp = (name: string, broker: KafkaBroker, include: Parameters<App['withBroker']>[1]) => {
    const app = new App({ name, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, include);
    apps.push(app);
    return app;
  };
  // Retries as patient as the app's: right after a broker restart its group coordinator may still be loading.
  const rawKafka = (brokers = kafkaBrokers!) => new Kafka({ clientId: 'plain', brokers: [brokers], logLevel: logLevel.NOTHING, retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 } });

  async function producePlain(topic: string, messages: { key?: string; value: string; headers?: Record<string, string | Buffer> }[], brokers?: string) {
    const producer = rawKafka(brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    for (let i = 0; i < messages.length; i += 2_000) await producer.send({ topic, messages: messages.slice(i, i + 2_000) });
    await producer.disconnect();
  }

  it('serves a subscriber from a plain kafkajs producer, with keys and (binary) headers', async () => {
    const topic = uniqueTopic('plain');
    await admin!.createTopic(topic, 3);
    const seen: { id: number; key: string | undefined; trace: string | undefined }[] = [];
    const app = makeApp(`g-${topic}`, testKafka(), (b) =>
      b.include(subscriber(topic, (v: { id: number }, ctx: Context) => void seen.push({ id: v.id, key: ctx.message.key, trace: ctx.message.headers.trace })).build()),
    );
    await app.start();
    await producePlain(topic, Array.from({ length: 30 }, (_, id) => ({ key: `k${id % 4}`, value: JSON.stringify({ id }), headers: { trace: Buffer.from(`t${id}`) } })));
    await app.idle();
    expect(seen.map((s) => s.id).sort((a, b) => a - b)).toEqual([...Array(30).keys()]);
    for (const s of seen) expect(s).toEqual({ id: s.id, key: `k${s.id % 4}`, trace: `t${s.id}` });
  });

  it('keeps per-key order under workersByKey with 1,000 keys over 3 partitions', async () => {
    const topic = uniqueTopic('keys1000');
    await admin!.createTopic(topic, 3);
    const random = seeded(3);
    const seen = new Map<string, number[]>();
    let max = 0;
    let active = 0;
    const app = makeApp(`g-${topic}`, testKafka(), (b) =>
      b.include(
        subscriber(topic, async (v: { key: string; n: number }) => {
          max = Math.max(max, ++active);
          await turns(Math.floor(random() * 3));
          seen.set(v.key, [...(seen.get(v.key) ?? []), v.n]);
          active--;
        }).workersByKey(32).build(),
      ),
    );
    await app.start();
    const perKey = 5;
    const messages = [];
    for (let n = 0; n < perKey; n++) for (let k = 0; k < 1_000; k++) messages.push({ key: `c${k}`, value: JSON.stringify({ key: `c${k}`, n }) });
    await producePlain(topic, messages);
    await app.idle();
    expect(seen.size).toBe(1_000);
    for (const ns of seen.values()) expect(ns).toEqual([0, 1, 2, 3, 4]);
    expect(max).toBeGreaterThan(1);
    expect(max).toBeLessThanOrEqual(32);
  });

  it('paces deliveries per key: a batch per key of every event in partition order, committed once durable', async () => {
    const topic = uniqueTopic('paced');
    await admin!.createTopic(topic, 3);
    const clock = new ManualClock(0);
    const runs: { key: string; ns: number[]; id: string }[] = [];
    const paced = (group: string) =>
      subscriber(topic, (batch: { n: number }[], ctx: Context) => void runs.push({ key: ctx.run!.key, ns: batch.map((e) => e.n), id: ctx.run!.id }))
        .group(group)
        .key((m: KeySource<{ k: string }>) => m.value.k)
        .pace({ batch: { max: 1_000, wait: '1 minute' } })
        .build();
    const app = new App({ name: `g-${topic}`, logger: silentLogger, clock, store: memoryStore(), shutdownTimeoutMs: 5_000 }).withBroker(testKafka(), (b) => b.include(paced(`g-${topic}`)));
    apps.push(app);
    await app.start();
    await producePlain(topic, Array.from({ length: 60 }, (_, n) => ({ key: `k${n % 3}`, value: JSON.stringify({ k: `k${n % 3}`, n }) })));
    await app.idle(); // every delivery taken and durable in its key's window: none has run
    expect(runs).toEqual([]);
    await clock.advance(60_000);
    await app.idle();
    expect(runs.map((r) => r.key).sort()).toEqual(['k0', 'k1', 'k2']);
    for (const r of runs) expect(r.ns).toEqual([...Array(60).keys()].filter((n) => `k${n % 3}` === r.key));
    await app.stop();
    // The offsets were committed once the events were durable: the group reads nothing again.
    const again = new App({ name: `g-${topic}`, logger: silentLogger, clock, store: memoryStore(), shutdownTimeoutMs: 5_000 }).withBroker(testKafka(), (b) => b.include(paced(`g-${topic}`)));
    apps.push(again);
    await again.start();
    await again.idle();
    await clock.advance(60_000);
    await again.idle();
    expect(runs).toHaveLength(3);
  });

  it('two instances in one group split the partitions and handle every message exactly once', async () => {
    const topic = uniqueTopic('split');
    await admin!.createTopic(topic, 4);
    const seen: { n: number; by: string; partition: number }[] = [];
    const sub = (by: string) => subscriber(topic, (v: { n: number }, ctx: Context) => void seen.push({ n: v.n, by, partition: ctx.message.partition })).workers(4).build();
    const a = makeApp(`g-${topic}`, testKafka(), (b) => b.include(sub('a')));
    const b = makeApp(`g-${topic}`, testKafka(), (r) => r.include(sub('b')));
    await a.start();
    await b.start();
    await producePlain(topic, Array.from({ length: 2_000 }, (_, n) => ({ key: `k${n}`, value: JSON.stringify({ n }) })));
    await Promise.all([a.idle(), b.idle()]);
    expect(seen.map((s) => s.n).sort((x, y) => x - y)).toEqual([...Array(2_000).keys()]); // each exactly once
    const partitionsOf = (by: string) => new Set(seen.filter((s) => s.by === by).map((s) => s.partition));
    expect(partitionsOf('a').size).toBe(2);
    expect(partitionsOf('b').size).toBe(2);
  });

  it('loses nothing when the broker restarts mid-consumption; duplicates come only from the uncommitted window', async () => {
    // A broker of its own on other ports, so that restarting it disturbs no other test.
    const env = { ...process.env, KAFKA_PORT: '19092', KAFKA_CONTROLLER_PORT: '19093' };
    const start = () => /KAFKA_BROKERS=(\S+)/.exec(execFileSync(process.execPath, ['scripts/kafka/start.mjs'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))![1]!;
    const address = start();
    let app: App | undefined;
    try {
      const topic = uniqueTopic('restart');
      const broker = new KafkaBroker({
        brokers: [address],
        logger: silentLogger,
        kafkajs: { retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 } },
        consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, commitIntervalMs: 100 },
      });
      await broker.createTopic(topic, 2);
      const total = 3_000;
      await producePlain(topic, Array.from({ length: total }, (_, n) => ({ key: `k${n}`, value: JSON.stringify({ n }) })), address);
      const counts = new Map<string, number>();
      let handled = 0;
      let reachedHalf!: () => void;
      const half = new Promise<void>((resolve) => (reachedHalf = resolve));
      app = new App({ name: `g-${topic}`, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
        b.include(
          subscriber(topic, async (_v: unknown, ctx: Context) => {
            await turns(1);
            const id = `${ctx.message.partition}/${ctx.message.offset}`;
            counts.set(id, (counts.get(id) ?? 0) + 1);
            if (++handled === total / 2) reachedHalf();
          }).workers(8).build(),
        ),
      );
      await app.start();
      await half;
      execFileSync(process.execPath, ['scripts/kafka/stop.mjs'], { env, stdio: 'ignore' });
      const handledAtStop = new Map(counts);
      const committedAtStop = await (async () => {
        start();
        const a = rawKafka(address).admin();
        await a.connect();
        const offsets = await a.fetchOffsets({ groupId: `g-${topic}`, topics: [topic] });
        await a.disconnect();
        return new Map(offsets[0]!.partitions.map((p) => [p.partition, Number(p.offset)]));
      })();
      await app.idle();
      expect(counts.size).toBe(total); // nothing lost
      const duplicated = [...counts].filter(([, c]) => c > 1).map(([id]) => id);
      for (const id of duplicated) {
        const [p, o] = id.split('/').map(Number) as [number, number];
        expect(handledAtStop.has(id)).toBe(true); // handled before the restart...
        expect(o).toBeGreaterThanOrEqual(committedAtStop.get(p) ?? 0); // ...and not yet committed then
      }
      for (const c of counts.values()) expect(c).toBeLessThanOrEqual(2);
      console.log(`broker restart: ${duplicated.length} of ${total} handled twice (the uncommitted window at the stop)`);
    } finally {
      await app?.stop(); // while its broker still runs
      execFileSync(process.execPath, ['scripts/kafka/stop.mjs'], { env, stdio: 'ignore' });
    }
  }, 180_000);
});
