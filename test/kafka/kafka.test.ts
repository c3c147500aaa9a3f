/**
 * Kafka-specific behaviour beyond the broker contract, against the real broker: what is the same on every
 * client runs on each of them (test/kafka/clients.ts); what watches kafkajs's own events, on kafkajs.
 */
import { Kafka, KafkaJSNonRetriableError, Partitioners, logLevel, type Admin } from 'kafkajs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  App,
  ManualClock,
  Router,
  memoryStore,
  silentLogger,
  subscriber,
  type Broker,
  type Context,
  type KeySource,
} from '../../src/index.js';
import { KafkaBroker } from '../../src/brokers/kafka/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { Counter, Gate, seeded, turns } from '../helpers.js';
import { FaultBroker, canRunOwnBroker, ownBrokerPort } from './fault-broker.js';
import { closeAll, eachConsumer, kafkaBrokers, testKafka } from './fixture.js';
import { closePlatformatic, groupSettled, kafkaClients } from './clients.js';

// The broker-restart test runs a broker of its own, so it needs Java even when KAFKA_BROKERS names one.
// Under CI it must run (a missing Java fails it); elsewhere it is skipped.
if (kafkaBrokers && !canRunOwnBroker)
  console.warn('skipping the Kafka broker-restart test: no java on PATH to run its own broker');

// Retries as patient as the app's: right after a broker restart its group coordinator may still be loading.
const rawKafka = (brokers = kafkaBrokers!) =>
  new Kafka({
    clientId: 'plain',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 },
  });

async function producePlain(
  topic: string,
  messages: { key?: string; value: string; partition?: number; headers?: Record<string, string | Buffer> }[],
  brokers?: string,
) {
  const producer = rawKafka(brokers).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < messages.length; i += 2_000)
    await producer.send({ topic, messages: messages.slice(i, i + 2_000) });
  await producer.disconnect();
}

/** Runs `use` with a plain kafkajs admin client: what the broker itself says, not what the app believes. */
async function withAdmin<T>(use: (a: Admin) => Promise<T>, brokers?: string): Promise<T> {
  const a = rawKafka(brokers).admin();
  await a.connect();
  try {
    return await use(a);
  } finally {
    await a.disconnect();
  }
}

/** The group's committed offset of each partition of `topic` (-1: none). */
const committedOffsets = (a: Admin, group: string, topic: string): Promise<Map<number, number>> =>
  a
    .fetchOffsets({ groupId: group, topics: [topic] })
    .then((r) => new Map(r[0]!.partitions.map((p) => [p.partition, Number(p.offset)])));

/** Asks the broker again until `holds` says yes: waits on a state only the broker knows, for no set time. */
async function untilBroker(holds: () => Promise<boolean>): Promise<void> {
  while (!(await holds())) await new Promise<void>((resolve) => setTimeout(resolve, 20));
}

/** The apps a test made, stopped after it. */
const apps: App[] = [];
afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));

/** An app of `name` on `broker`, stopped after the test. */
function makeApp(
  name: string,
  broker: Broker,
  include: Parameters<App['withBroker']>[1],
  extra: { clock?: ManualClock } = {},
): App {
  const app = new App({ name, logger: silentLogger, shutdownTimeoutMs: 5_000, clock: extra.clock }).withBroker(
    broker,
    include,
  );
  apps.push(app);
  return app;
}

/** What watches kafkajs's own events (its heartbeats, joins, crashes), or needs a broker restart: on kafkajs. */
describe.skipIf(!kafkaBrokers)('kafka', () => {
  afterAll(closeAll);
  const admin = kafkaBrokers ? testKafka() : undefined;
  /**
   * Counts the answers to Heartbeat requests of the group members `broker` makes, through kafkajs's own
   * instrumentation (its REQUEST event): how a test knows a member has heard of a rebalance.
   */
  /**
   * Heartbeats answered to the consumers of `broker` that were assigned `topic`: another subscriber's consumer
   * of the same app beats on its own, and its heartbeats say nothing of whether this topic's member has seen
   * a rebalance.
   */
  function heartbeatsOf(broker: KafkaBroker, topic: string): Counter {
    const answered = new Counter();
    eachConsumer(broker, (consumer) => {
      let reads = false;
      consumer.on(consumer.events.GROUP_JOIN, (e) => void (reads ||= topic in e.payload.memberAssignment));
      consumer.on(consumer.events.REQUEST, (e) => void (reads && e.payload.apiName === 'Heartbeat' && answered.add()));
    });
    return answered;
  }

  it('keeps its membership while a handler runs past the session timeout: heartbeats go on, no rebalance', async () => {
    const topic = uniqueTopic('long');
    await admin!.createTopic(topic, 1);
    // The broker's smallest session timeout (group.min.session.timeout.ms) is 6 s.
    const broker = new KafkaBroker({
      brokers: [kafkaBrokers!],
      logger: silentLogger,
      consumer: {
        maxWaitTimeMs: 100,
        heartbeatIntervalMs: 300,
        sessionTimeoutMs: 6_000,
        rebalanceTimeoutMs: 10_000,
        commitIntervalMs: 200,
      },
    });
    const heartbeats = new Counter();
    let joins = 0;
    eachConsumer(broker, (consumer) => {
      consumer.on(consumer.events.HEARTBEAT, () => heartbeats.add());
      consumer.on(consumer.events.GROUP_JOIN, () => joins++);
    });
    const gate = new Gate();
    const started = new Counter();
    const handled: number[] = [];
    const app = makeApp(`g-${topic}`, broker, (b) =>
      b.include(
        subscriber(topic, async (v: { n: number }) => {
          started.add();
          if (v.n === 0) await gate.promise;
          handled.push(v.n);
        }).build(),
      ),
    );
    await app.start();
    await broker.publish(topic, { n: 0 });
    await started.reach(1);
    const from = heartbeats.value;
    await heartbeats.reach(from + 25); // 25 heartbeats 300 ms apart: 7.5 s, past the 6 s session timeout
    gate.open();
    await broker.publish(topic, { n: 1 });
    await app.idle();
    expect(handled).toEqual([0, 1]); // each once: the member was never thrown out
    expect(joins).toBe(1);
    expect(await withAdmin((a) => committedOffsets(a, `g-${topic}`, topic))).toEqual(new Map([[0, 2]]));
    await app.stop();
    await broker.close();
  }, 30_000);

  it('joins again after a crash kafkajs does not recover from, and goes on serving', async () => {
    const topic = uniqueTopic('crash');
    await admin!.createTopic(topic, 1);
    const broker = testKafka();
    // The first batch kafkajs hands over throws an error it deems final: it crashes the consumer, leaves the
    // group and does not restart it.
    let crashes = 0;
    eachConsumer(broker, (consumer) => {
      const run = consumer.run.bind(consumer);
      consumer.run = (options) =>
        run({
          ...options,
          eachBatch: async (payload) => {
            if (crashes++ === 0) throw new KafkaJSNonRetriableError('injected: not retriable');
            return options!.eachBatch!(payload);
          },
        });
    });
    const handled: number[] = [];
    const app = makeApp(`g-${topic}`, broker, (b) =>
      b.include(subscriber(topic, (v: { n: number }) => void handled.push(v.n)).build()),
    );
    await app.start();
    for (let n = 0; n < 3; n++) await broker.publish(topic, { n });
    await app.idle();
    expect(crashes).toBeGreaterThan(1); // it crashed, and read again after
    expect(handled).toEqual([0, 1, 2]);
    expect(await withAdmin((a) => committedOffsets(a, `g-${topic}`, topic))).toEqual(new Map([[0, 3]]));
  });

  // With a second subscriber in the app (and so in the group), its consumers' joins at start are a rebalance
  // of their own, seen by kafkajs before any batch: a revoke with nothing to revoke must not disable later ones.
  it.each([
    ['', false],
    [', beside another subscriber of the app', true],
  ])(
    'hands partitions over in a rebalance only after the in-flight work finished and was committed, keeping per-key order%s',
    async (_, twoSubscribers) => {
      const topic = uniqueTopic('handover');
      await admin!.createTopic(topic, 3);
      const other = uniqueTopic('handover-other');
      if (twoSubscribers) await admin!.createTopic(other, 1);
      const include = (by: string) => (r: Router) => {
        r.include(sub(by));
        if (twoSubscribers) r.include(subscriber(other, () => {}).build());
      };
      const group = `g-${topic}`;
      const keys = Array.from({ length: 12 }, (_, k) => `k${k}`);
      const perWave = 4;
      const wave = (from: number) =>
        Array.from({ length: perWave }, (_, i) =>
          keys.map((key) => ({ key, value: JSON.stringify({ key, n: from + i }) })),
        ).flat();
      type Event = { ev: 'start' | 'end'; by: string; key: string; n: number; partition: number; aborted?: boolean };
      const events: Event[] = [];
      // The last message of each key in the first wave is held: A has then taken the whole wave (a key's
      // messages run in order, and it has room for all 48), and its tail is in flight, not yet committed.
      const gate = new Gate();
      const tailsHeld = new Counter();
      const sub = (by: string) =>
        subscriber(topic, async (v: { key: string; n: number }, ctx: Context) => {
          const { partition } = ctx.message;
          events.push({ ev: 'start', by, key: v.key, n: v.n, partition });
          if (v.n === perWave - 1 && !gate.opened) {
            tailsHeld.add();
            await gate.promise;
          } else await turns(1);
          events.push({ ev: 'end', by, key: v.key, n: v.n, partition, aborted: ctx.signal.aborted });
        })
          .workersByKey(64)
          .build();
      const aBroker = testKafka();
      const aHeartbeats = heartbeatsOf(aBroker, topic);
      const a = makeApp(group, aBroker, include('a'));
      // The wave goes out once A has started, with every consumer of A in the group: otherwise A's second
      // subscriber could join while A holds the wave's tails, and A's own start-up rebalance would wait for
      // them (the gate opens only later) until the revoke timeout, which is not what this test is about.
      await a.start();
      await producePlain(topic, wave(0));
      await tailsHeld.reach(keys.length);
      expect(new Set(events.map((e) => e.partition)).size).toBe(3); // the keys cover every partition

      // B joins. A's held work is let go only once A has seen the rebalance: the broker reports the group
      // rebalancing, then A has had two more heartbeats answered (the second was surely sent after B's join, so
      // it was answered REBALANCE_IN_PROGRESS) — or B is in already, when A did not wait for its work.
      const b = makeApp(group, testKafka(), include('b'));
      let bIn = false;
      const bJoined = b.start().then(() => void (bIn = true));
      await withAdmin((adm) =>
        untilBroker(async () => bIn || (await adm.describeGroups([group])).groups[0]!.state !== 'Stable'),
      );
      await Promise.race([bJoined, aHeartbeats.reach(aHeartbeats.value + 2)]);
      const runningOnA = (upTo: number) => {
        const running = new Set<string>();
        for (const e of events.slice(0, upTo))
          if (e.by === 'a') running[e.ev === 'start' ? 'add' : 'delete'](`${e.key}/${e.n}`);
        return running;
      };
      const inFlightAtJoin = runningOnA(events.length);
      expect(inFlightAtJoin.size).toBe(keys.length);
      gate.open();
      await bJoined;
      // (a) By the time B has its partitions, A's in-flight work has finished, unaborted, and is committed:
      // the group's offsets are the end of the first wave.
      for (const id of inFlightAtJoin)
        expect(
          events.filter((e) => e.ev === 'end' && e.by === 'a' && `${e.key}/${e.n}` === id).map((e) => e.aborted),
        ).toEqual([false]);
      await withAdmin(async (adm) => {
        const ends = new Map((await adm.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
        expect(await committedOffsets(adm, group, topic)).toEqual(ends);
      });

      await producePlain(topic, wave(perWave));
      await Promise.all([a.idle(), b.idle()]);

      // (b) Every message handled, by A and B together; B took part.
      const ended = events.filter((e) => e.ev === 'end');
      expect(new Set(ended.map((e) => `${e.key}/${e.n}`)).size).toBe(keys.length * 2 * perWave);
      expect(ended.some((e) => e.by === 'b')).toBe(true);
      // (a) Nothing is handled twice, unless its first handler was still running when B began.
      const firstOnB = events.findIndex((e) => e.by === 'b');
      const starts = new Map<string, number[]>();
      events.forEach(
        (e, i) => e.ev === 'start' && starts.set(`${e.key}/${e.n}`, [...(starts.get(`${e.key}/${e.n}`) ?? []), i]),
      );
      for (const [id, at] of starts)
        if (at.length > 1) expect(runningOnA(firstOnB).has(id), `${id} handled ${at.length} times`).toBe(true);
      // (c) Per key: the handled values, first handlings only, ascend; and no handler of a key starts while
      // another of that key runs, on either instance (so B never starts n + 1 while A still runs n).
      for (const key of keys) {
        const ns = events.filter((e) => e.ev === 'start' && e.key === key).map((e) => e.n);
        expect([...new Set(ns)], key).toEqual([...Array(2 * perWave).keys()]);
        let running: Event | undefined;
        for (const e of events.filter((x) => x.key === key)) {
          if (e.ev === 'start') {
            expect(running, `${key}: ${e.by} starts ${e.n} while ${running?.by} runs ${running?.n}`).toBeUndefined();
            running = e;
          } else if (running?.by === e.by && running.n === e.n) running = undefined;
        }
      }
    },
  );

  it.skipIf(!canRunOwnBroker)(
    'loses nothing when the broker restarts mid-consumption; duplicates come only from the uncommitted window',
    async () => {
      // A broker of its own on other ports, so that restarting it disturbs no other test.
      const own = new FaultBroker(ownBrokerPort('KAFKA_RESTART_PORT', 19092));
      const address = await own.start(true); // fresh data when it starts here; the restart below keeps it
      let app: App | undefined;
      try {
        const topic = uniqueTopic('restart');
        const group = `g-${topic}`;
        const broker = new KafkaBroker({
          brokers: [address],
          logger: silentLogger,
          kafkajs: { retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 } },
          consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, commitIntervalMs: 100 },
        });
        await broker.createTopic(topic, 2);
        // Message n goes to partition n % 2, at offset n / 2: offsets 0..perPartition - 1 in each.
        const perPartition = 600;
        const total = 2 * perPartition;
        await producePlain(
          topic,
          Array.from({ length: total }, (_, n) => ({ partition: n % 2, value: JSON.stringify({ n }) })),
          address,
        );

        // Before the stop the app is brought to a standstill it cannot leave on its own, so that what it has
        // handled and what it has committed are known exactly when the broker goes down:
        // - offset HOLD of each partition is held, so each partition's watermark stays at HOLD while the
        //   offsets after it are handled: the uncommitted window;
        // - once every partition has handled ABOVE offsets beyond HOLD, each new delivery is held too, until
        //   all 8 workers hold one (the 2 at HOLD and 6 others): nothing more finishes, nothing more is taken.
        const HOLD = 100;
        const ABOVE = 50;
        const counts = new Map<string, number>(); // p/o -> times handled to the end
        const delivered = [-1, -1]; // per partition, the highest offset a handler started on
        const beyondHold = [0, 0];
        const held = new Gate();
        const holding = new Counter();
        let freeze = false;
        app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
          b.include(
            subscriber(topic, async (_v: unknown, ctx: Context) => {
              const { partition: p, offset: o } = ctx.message;
              delivered[p] = Math.max(delivered[p]!, o);
              if (!held.opened && (o === HOLD || freeze)) {
                holding.add();
                await held.promise;
              } else await turns(1);
              const id = `${p}/${o}`;
              counts.set(id, (counts.get(id) ?? 0) + 1);
              if (o > HOLD && ++beyondHold[p]! >= ABOVE && beyondHold.every((c) => c >= ABOVE)) freeze = true;
            })
              .workers(8)
              .build(),
          ),
        );
        await app.start();
        await holding.reach(8);
        // Standing still, the app commits HOLD for each partition (its lowest delivery in flight); wait until
        // the broker has it. Nothing can move it further before the broker stops.
        await withAdmin(
          (a) =>
            untilBroker(async () => [...(await committedOffsets(a, group, topic)).values()].every((o) => o === HOLD)),
          address,
        );
        const committedAtStop = [HOLD, HOLD];
        const deliveredAtStop = delivered.map((o) => o + 1); // per partition, the end of what was handed out
        const handledAtStop = new Map(counts);
        // The redelivery window exists: each partition has handled offsets at or beyond its committed one.
        for (const p of [0, 1])
          expect(
            [...handledAtStop.keys()].filter(
              (id) => id.startsWith(`${p}/`) && Number(id.slice(2)) >= committedAtStop[p]!,
            ).length,
          ).toBeGreaterThanOrEqual(ABOVE);

        own.stop();
        await own.start();
        held.open();
        await app.idle();

        expect(counts.size).toBe(total); // nothing lost
        for (const c of counts.values()) expect(c).toBeLessThanOrEqual(2);
        const duplicated = [...counts]
          .filter(([, c]) => c > 1)
          .map(([id]) => id.split('/').map(Number) as [number, number]);
        for (const p of [0, 1]) {
          const offsets = duplicated.filter(([q]) => q === p).map(([, o]) => o);
          // Only the uncommitted window at the stop comes again: at or above the committed offset, below the
          // end of what had been handed out; so at most that many.
          for (const o of offsets) {
            expect(o).toBeGreaterThanOrEqual(committedAtStop[p]!);
            expect(o).toBeLessThan(deliveredAtStop[p]!);
          }
          expect(offsets.length).toBeLessThanOrEqual(deliveredAtStop[p]! - committedAtStop[p]!);
        }
        console.log(
          `broker restart: ${duplicated.length} of ${total} handled twice; uncommitted window at the stop ${deliveredAtStop.map((d, p) => d - committedAtStop[p]!).join(' + ')}`,
        );
      } finally {
        await app?.stop(); // while its broker still runs
        own.stop();
      }
    },
    120_000, // two starts of a broker of its own, beside the other suites
  );
});

/** What any client must do alike: on kafkajs, and on @platformatic/kafka under both protocols where it runs. */
describe.skipIf(!kafkaBrokers).each(kafkaClients)('kafka on $name', (client) => {
  afterAll(async () => {
    await closeAll();
    await closePlatformatic();
  });
  const admin = kafkaBrokers ? testKafka() : undefined;

  it('serves a subscriber from a plain kafkajs producer, with keys and (binary) headers', async () => {
    const topic = uniqueTopic('plain');
    await admin!.createTopic(topic, 3);
    const seen: { id: number; key: string | undefined; trace: string | undefined }[] = [];
    const app = makeApp(`g-${topic}`, client.broker(), (b) =>
      b.include(
        subscriber(
          topic,
          (v: { id: number }, ctx: Context) =>
            void seen.push({ id: v.id, key: ctx.message.key, trace: ctx.message.headers.trace }),
        ).build(),
      ),
    );
    await app.start();
    await producePlain(
      topic,
      Array.from({ length: 30 }, (_, id) => ({
        key: `k${id % 4}`,
        value: JSON.stringify({ id }),
        headers: { trace: Buffer.from(`t${id}`) },
      })),
    );
    await app.idle();
    expect(seen.map((s) => s.id).sort((a, b) => a - b)).toEqual([...Array(30).keys()]);
    for (const s of seen) expect(s).toEqual({ id: s.id, key: `k${s.id % 4}`, trace: `t${s.id}` });
  });

  it("a long delivery in a caught-up partition holds back neither that partition's next messages nor another partition's", async () => {
    const topic = uniqueTopic('held');
    await admin!.createTopic(topic, 2);
    const broker = client.broker();
    const gate = new Gate();
    const started = new Counter();
    const handled: string[] = [];
    const app = makeApp(`g-${topic}`, broker, (b) =>
      b.include(
        subscriber(topic, async (v: { id: string }) => {
          started.add();
          if (v.id === 'long') await gate.promise;
          handled.push(v.id);
        })
          .workers(4)
          .build(),
      ),
    );
    await app.start();
    await broker.publish(topic, { id: 'long' }, { partition: 0 });
    await started.reach(1); // partition 0 is caught up with work in flight: its batch is held for it
    await broker.publish(topic, { id: 'p1' }, { partition: 1 });
    await started.reach(2);
    expect(handled).toEqual(['p1']); // another partition's message ran while 'long' still runs
    await broker.publish(topic, { id: 'p0-next' }, { partition: 0 });
    await started.reach(3);
    expect(handled).toEqual(['p1', 'p0-next']); // and so did the next of its own partition
    gate.open();
    await app.idle();
    expect(handled).toContain('long');
  });

  it('commits finished work on the app clock: a ManualClock that does not move sends no periodic commit', async () => {
    const topic = uniqueTopic('commit-clock');
    await admin!.createTopic(topic, 1);
    const clock = new ManualClock();
    const broker = client.broker(); // commitIntervalMs: 200
    const handled: number[] = [];
    const app = makeApp(
      `g-${topic}`,
      broker,
      (b) => b.include(subscriber(topic, (v: { n: number }) => void handled.push(v.n)).build()),
      { clock },
    );
    await app.start();
    for (let n = 0; n < 3; n++) await broker.publish(topic, { n });
    await app.idle();
    expect(handled).toEqual([0, 1, 2]);
    // Finished, and not committed: the commit interval runs on the app's clock, which has not moved.
    expect(await withAdmin((a) => committedOffsets(a, `g-${topic}`, topic))).toEqual(new Map([[0, -1]]));
    await clock.advance(200);
    await withAdmin((a) => untilBroker(async () => (await committedOffsets(a, `g-${topic}`, topic)).get(0) === 3));
  });

  it('keeps per-key order under workersByKey with 1,000 keys over 3 partitions', async () => {
    const topic = uniqueTopic('keys1000');
    await admin!.createTopic(topic, 3);
    const random = seeded(3);
    const seen = new Map<string, number[]>();
    let max = 0;
    let active = 0;
    const app = makeApp(`g-${topic}`, client.broker(), (b) =>
      b.include(
        subscriber(topic, async (v: { key: string; n: number }) => {
          max = Math.max(max, ++active);
          await turns(Math.floor(random() * 3));
          seen.set(v.key, [...(seen.get(v.key) ?? []), v.n]);
          active--;
        })
          .workersByKey(32)
          .build(),
      ),
    );
    await app.start();
    const perKey = 5;
    const messages = [];
    for (let n = 0; n < perKey; n++)
      for (let k = 0; k < 1_000; k++) messages.push({ key: `c${k}`, value: JSON.stringify({ key: `c${k}`, n }) });
    await producePlain(topic, messages);
    await app.idle();
    expect(seen.size).toBe(1_000);
    for (const ns of seen.values()) expect(ns).toEqual([0, 1, 2, 3, 4]);
    expect(max).toBeGreaterThan(1);
    expect(max).toBeLessThanOrEqual(32);
  });

  it('takes of each partition at most what perPartition allows it, in offset order, the rest staying for later', async () => {
    const topic = uniqueTopic('per-partition');
    await admin!.createTopic(topic, 3);
    await producePlain(
      topic,
      Array.from({ length: 30 }, (_, n) => ({ value: String(n), partition: n % 3 })),
    );
    let readable = (): void => {};
    const consumer = await client.broker().consume({
      topic,
      group: `g-${topic}`,
      onReadable: () => readable(),
      onRevoke: async () => {},
    });
    try {
      while (consumer.backlog() < 30) await new Promise<void>((resolve) => (readable = resolve));
      const room = [2, 0, 5];
      const taken = consumer.take(100, (p) => room[p]!);
      const of = (p: number) => taken.filter((m) => m.partition === p).map((m) => m.offset);
      expect([of(0), of(1), of(2)]).toEqual([[0, 1], [], [0, 1, 2, 3, 4]]);
      expect(consumer.take(4, () => 0)).toEqual([]);
      const rest = consumer.take(100);
      expect(rest).toHaveLength(30 - 7);
      expect(rest.filter((m) => m.partition === 1).map((m) => m.offset)).toEqual([...Array(10).keys()]);
    } finally {
      await consumer.close();
    }
  });

  it('paces deliveries per key: a batch per key of every event in partition order, committed once durable', async () => {
    const topic = uniqueTopic('paced');
    await admin!.createTopic(topic, 3);
    const clock = new ManualClock(0);
    const runs: { key: string; ns: number[]; id: string }[] = [];
    const paced = (group: string) =>
      subscriber(
        topic,
        (batch: { n: number }[], ctx: Context) =>
          void runs.push({ key: ctx.run!.key, ns: batch.map((e) => e.n), id: ctx.run!.id }),
      )
        .group(group)
        .key((m: KeySource<{ k: string }>) => m.value.k)
        .pace({ batch: { max: 1_000, wait: '1 minute' } })
        .build();
    const app = new App({
      name: `g-${topic}`,
      logger: silentLogger,
      clock,
      store: memoryStore(),
      shutdownTimeoutMs: 5_000,
    }).withBroker(client.broker(), (b) => b.include(paced(`g-${topic}`)));
    apps.push(app);
    await app.start();
    await producePlain(
      topic,
      Array.from({ length: 60 }, (_, n) => ({ key: `k${n % 3}`, value: JSON.stringify({ k: `k${n % 3}`, n }) })),
    );
    await app.idle(); // every delivery taken and durable in its key's window: none has run
    expect(runs).toEqual([]);
    await clock.advance(60_000);
    await app.idle();
    expect(runs.map((r) => r.key).sort()).toEqual(['k0', 'k1', 'k2']);
    for (const r of runs) expect(r.ns).toEqual([...Array(60).keys()].filter((n) => `k${n % 3}` === r.key));
    await app.stop();
    // The offsets were committed once the events were durable: the group reads nothing again.
    const again = new App({
      name: `g-${topic}`,
      logger: silentLogger,
      clock,
      store: memoryStore(),
      shutdownTimeoutMs: 5_000,
    }).withBroker(client.broker(), (b) => b.include(paced(`g-${topic}`)));
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
    const sub = (by: string) =>
      subscriber(
        topic,
        (v: { n: number }, ctx: Context) => void seen.push({ n: v.n, by, partition: ctx.message.partition }),
      )
        .workers(4)
        .build();
    const a = makeApp(`g-${topic}`, client.broker(), (b) => b.include(sub('a')));
    const b = makeApp(`g-${topic}`, client.broker(), (r) => r.include(sub('b')));
    await a.start();
    await b.start();
    // Under KIP-848 the partitions move to the second member heartbeat by heartbeat after its start.
    await groupSettled([a, b], 4);
    await producePlain(
      topic,
      Array.from({ length: 2_000 }, (_, n) => ({ key: `k${n}`, value: JSON.stringify({ n }) })),
    );
    await Promise.all([a.idle(), b.idle()]);
    expect(seen.map((s) => s.n).sort((x, y) => x - y)).toEqual([...Array(2_000).keys()]); // each exactly once
    const partitionsOf = (by: string) => new Set(seen.filter((s) => s.by === by).map((s) => s.partition));
    expect(partitionsOf('a').size).toBe(2);
    expect(partitionsOf('b').size).toBe(2);
  });

  it('stop() commits below a delivery it aborted: that one and everything after it come again, nothing before', async () => {
    const topic = uniqueTopic('stop-hang');
    await admin!.createTopic(topic, 1);
    const group = `g-${topic}`;
    const clock = new ManualClock();
    const finished = new Counter();
    const hanging = new Counter();
    const done: number[] = [];
    const aborted: number[] = [];
    // Offset 2 hangs; offsets 3, 4 and 5 after it finish while it does.
    const first = makeApp(
      group,
      client.broker(),
      (r) =>
        r.include(
          subscriber(topic, (v: { n: number }, ctx: Context) => {
            if (v.n === 2) {
              ctx.signal.addEventListener('abort', () => aborted.push(v.n));
              hanging.add();
              return new Promise<void>(() => {}); // never settles
            }
            done.push(v.n);
            finished.add();
          })
            .workers(4)
            .build(),
        ),
      { clock },
    );
    await first.start();
    await producePlain(
      topic,
      Array.from({ length: 6 }, (_, n) => ({ value: JSON.stringify({ n }) })),
    );
    await hanging.reach(1);
    await finished.reach(5);
    expect(done.sort()).toEqual([0, 1, 3, 4, 5]);
    const stopped = first.stop();
    await clock.advance(4_999);
    expect(aborted).toEqual([]);
    await clock.advance(1); // shutdownTimeoutMs
    await stopped;
    expect(aborted).toEqual([2]);
    expect(await withAdmin((adm) => committedOffsets(adm, group, topic))).toEqual(new Map([[0, 2]])); // the watermark: the aborted one
    const again: number[] = [];
    const next = makeApp(group, client.broker(), (r) =>
      r.include(subscriber(topic, (v: { n: number }) => void again.push(v.n)).build()),
    );
    await next.start();
    await next.idle();
    expect(again).toEqual([2, 3, 4, 5]);
  });
});
