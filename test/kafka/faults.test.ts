/**
 * Kafka on a bad day: a broker of the suite's own (test/kafka/fault-broker.ts) is killed, paused and
 * started again under running apps; the shared broker serves the faults that need no broker to die.
 */
import { spawn } from 'node:child_process';
import { Kafka, Partitioners, logLevel, type Admin } from 'kafkajs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App, ManualClock, silentLogger, subscriber, type Context, type Logger } from '../../src/index.js';
import { KafkaBroker, type KafkaBrokerOptions } from '../../src/brokers/kafka/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { Counter, Gate, turns } from '../helpers.js';
import { FaultBroker, canRunOwnBroker, guard, ownBrokerPort } from './fault-broker.js';
import { closeAll, eachConsumer, kafkaBrokers, testKafka } from './fixture.js';
import { SOAK } from '../soak.js';

if (kafkaBrokers && !canRunOwnBroker)
  console.warn('skipping the Kafka fault tests: no java on PATH to run a broker of their own');

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
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (more) => make({ ...bound, ...more }),
    };
  };
  return Object.assign(make({}), { entries, count });
}

const plain = (address: string) =>
  new Kafka({
    clientId: 'plain',
    brokers: [address],
    logLevel: logLevel.NOTHING,
    retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 },
  });

async function withAdmin<T>(address: string, use: (a: Admin) => Promise<T>): Promise<T> {
  const a = plain(address).admin();
  await a.connect();
  try {
    return await use(a);
  } finally {
    await a.disconnect();
  }
}

async function produce(
  address: string,
  topic: string,
  messages: { partition?: number; key?: string; value: string }[],
): Promise<void> {
  const producer = plain(address).producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (let i = 0; i < messages.length; i += 2_000)
    await producer.send({ topic, messages: messages.slice(i, i + 2_000) });
  await producer.disconnect();
}

const committedOffsets = (a: Admin, group: string, topic: string): Promise<Map<number, number>> =>
  a
    .fetchOffsets({ groupId: group, topics: [topic] })
    .then((r) => new Map(r[0]!.partitions.map((p) => [p.partition, Number(p.offset)])));
const endOffsets = (a: Admin, topic: string): Promise<Map<number, number>> =>
  a.fetchTopicOffsets(topic).then((r) => new Map(r.map((o) => [o.partition, Number(o.high)])));

/** Asks again until `holds` says yes: waits on a state only the broker knows, for no set time. */
async function until(holds: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await holds())) await new Promise<void>((resolve) => setTimeout(resolve, 50));
}

/** The outage itself: how long the broker stays dead is the fault being tested, not a wait for something. */
const outage = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe.skipIf(!kafkaBrokers)('kafka faults on the shared broker', () => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));
  afterAll(closeAll);
  const admin = kafkaBrokers ? testKafka() : undefined;

  it('a subscriber of a topic that does not exist is refused with TOPIC_MISSING, naming the topic and what to do', async () => {
    const topic = uniqueTopic('missing');
    const broker = testKafka();
    const refused = broker.consume({ topic, group: `g-${topic}`, onReadable: () => {}, onRevoke: async () => {} });
    await expect(refused).rejects.toMatchObject({
      code: 'TOPIC_MISSING',
      message: expect.stringContaining(`topic "${topic}"`),
    });
    await expect(refused).rejects.toThrow(/createTopics/);
  });

  it('a publish to a topic that does not exist is refused with TOPIC_MISSING, naming the topic and what to do', async () => {
    const topic = uniqueTopic('missing-out');
    const broker = testKafka();
    const refused = broker.publish(topic, { n: 1 });
    await expect(refused).rejects.toMatchObject({
      code: 'TOPIC_MISSING',
      message: expect.stringContaining(`topic "${topic}"`),
    });
    await expect(refused).rejects.toThrow(/createTopic/);
    await broker.createTopic(topic, 1); // made meanwhile: the next publish goes through
    await broker.publish(topic, { n: 2 });
    expect((await withAdmin(kafkaBrokers!, (a) => a.fetchTopicOffsets(topic)))[0]!.high).toBe('1');
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
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
      b.include(subscriber(topic, () => void handled.add()).build()),
    );
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
    const broker = new KafkaBroker({
      brokers: [kafkaBrokers!],
      logger: log,
      consumer: {
        maxWaitTimeMs: 100,
        heartbeatIntervalMs: 300,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 15_000,
        commitIntervalMs: 200,
      },
    });
    const app = new App({ name: `g-${topic}`, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(
      broker,
      (b) => b.include(subscriber(topic, () => {}).build()),
    );
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
  const fault = new FaultBroker(ownBrokerPort('KAFKA_FAULT_PORT', 19194));
  const made: KafkaBroker[] = [];
  afterAll(async () => {
    await Promise.all(made.map((b) => b.close()));
    fault.stop();
  });
  const options = (extra: Partial<KafkaBrokerOptions> = {}): KafkaBrokerOptions => ({
    brokers: [`127.0.0.1:${fault.port}`],
    logger: silentLogger,
    consumer: {
      maxWaitTimeMs: 100,
      heartbeatIntervalMs: 300,
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 15_000,
      commitIntervalMs: 200,
    },
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

  /** Counts what the kafkajs consumers `broker` makes do: run() calls (joins begun), joins, crashes, fetches. */
  function watch(broker: KafkaBroker) {
    const seen = {
      runs: new Counter(),
      joins: new Counter(),
      crashes: new Counter(),
      fetches: new Counter(),
      memberIds: [] as string[],
    };
    eachConsumer(broker, (consumer) => {
      const run = consumer.run.bind(consumer);
      consumer.run = (config) => (seen.runs.add(), run(config));
      consumer.on(consumer.events.GROUP_JOIN, (e) => (seen.joins.add(), seen.memberIds.push(e.payload.memberId)));
      consumer.on(consumer.events.CRASH, () => seen.crashes.add());
      consumer.on(consumer.events.FETCH_START, () => seen.fetches.add());
    });
    return seen;
  }

  /** Message n goes to partition n % partitions. */
  const spread = (total: number, partitions: number) =>
    Array.from({ length: total }, (_, n) => ({ partition: n % partitions, value: JSON.stringify({ n }) }));

  /**
   * A topic of `partitions` on the killable broker holding `total` messages, and an app (not started) whose
   * subscriber, two workers, counts the deliveries it starts and the messages it handled; `old` watches its
   * kafkajs consumers.
   */
  async function consuming(name: string, partitions: number, total: number) {
    const topic = uniqueTopic(name);
    const group = `g-${topic}`;
    const broker = kafka();
    const old = watch(broker);
    await broker.createTopic(topic, partitions);
    await produce(fault.address, topic, spread(total, partitions));
    const handled = new Set<number>();
    const started = new Counter();
    const sub = () =>
      subscriber(topic, async (v: { n: number }) => {
        started.add();
        await turns(2);
        handled.add(v.n);
      })
        .workers(2)
        .build();
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
      b.include(sub()),
    );
    return { group, total, handled, started, sub, app, old };
  }

  /** After `app` stopped: a fresh member of its group reads every message, and is the group's only member. */
  async function nextMemberReadsAll(run: Awaited<ReturnType<typeof consuming>>): Promise<void> {
    const fresh = kafka();
    const now = watch(fresh);
    const again = new App({ name: run.group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(fresh, (b) =>
      b.include(run.sub()),
    );
    try {
      await again.start();
      await guard(again.idle(), 120_000, 'idle of the fresh app');
      expect([...Array(run.total).keys()].filter((n) => !run.handled.has(n))).toEqual([]);
      const members = await withAdmin(fault.address, async (a) =>
        (await a.describeGroups([run.group])).groups[0]!.members.map((m) => m.memberId),
      );
      expect(members).toEqual([now.memberIds.at(-1)]);
    } finally {
      await again.stop();
    }
  }

  // The 30 and 90 s outages run in the soak (they take minutes); `npm test` has the 5 s one.
  it.each(SOAK ? [5, 30, 90] : [5])(
    'broker killed for %i s mid-consumption: nothing lost, duplicates only from the uncommitted window at the kill, every offset committed after',
    async (seconds) => {
      await fault.start(); // up already, unless a test before left it down
      const topic = uniqueTopic(`outage-${seconds}s`);
      const group = `g-${topic}`;
      // A short retry budget: kafkajs gives up on the dead broker (crashes) within the outage, so the member
      // leaves the group and joins it again once the broker is back.
      const broker = kafka({ kafkajs: { retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } } });
      const seen = watch(broker);
      await broker.createTopic(topic, 3);
      const perPartition = 1_000;
      const later = 300; // per partition, published once the broker is back: read only after the member joined again
      const total = 3 * (perPartition + later);
      await produce(fault.address, topic, spread(3 * perPartition, 3));
      // The app is brought to a standstill before the kill, so that what it handled and what the broker has
      // committed are known exactly: offset HOLD of each partition is held (its watermark stays there while
      // later offsets finish: the uncommitted window), and once every partition has ABOVE offsets finished
      // beyond it, every new delivery is held too, until all 8 workers hold one.
      const HOLD = 100;
      const ABOVE = 50;
      const counts = new Map<string, number>();
      const delivered = [-1, -1, -1];
      const beyondHold = [0, 0, 0];
      const held = new Gate();
      const holding = new Counter();
      let freeze = false;
      const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
        b.include(
          subscriber(topic, async (_v: unknown, ctx: Context) => {
            const { partition: p, offset: o } = ctx.message;
            delivered[p] = Math.max(delivered[p]!, o);
            if (!held.opened && (o === HOLD || freeze)) {
              holding.add();
              await held.promise;
            } else await turns(1);
            counts.set(`${p}/${o}`, (counts.get(`${p}/${o}`) ?? 0) + 1);
            if (o > HOLD && ++beyondHold[p]! >= ABOVE && beyondHold.every((c) => c >= ABOVE)) freeze = true;
          })
            .workers(8)
            .build(),
        ),
      );
      try {
        await app.start();
        await holding.reach(8);
        await withAdmin(fault.address, (a) =>
          until(async () => [...(await committedOffsets(a, group, topic)).values()].every((o) => o === HOLD)),
        );
        const deliveredAtKill = delivered.map((o) => o + 1);
        await fault.kill();
        held.open(); // the app goes on with the batches it had fetched, the broker dead
        await outage(seconds * 1_000);
        await fault.start();
        await produce(fault.address, topic, spread(3 * later, 3));
        await guard(app.idle(), 240_000, 'idle after the outage');
        const duplicated = [...counts]
          .filter(([, c]) => c > 1)
          .map(([id]) => id.split('/').map(Number) as [number, number]);
        const window = deliveredAtKill.reduce((sum, d) => sum + d - HOLD, 0);
        console.log(
          `broker killed for ${seconds} s: ${duplicated.length} of ${total} handled twice; uncommitted window at the kill ${window}; ${seen.crashes.value} crashes, ${seen.joins.value} joins`,
        );
        expect(seen.crashes.value).toBeGreaterThan(0);
        expect(seen.joins.value).toBeGreaterThan(1); // it lost its partitions and joined again
        expect(counts.size).toBe(total); // nothing lost
        for (const p of [0, 1, 2]) {
          const offsets = duplicated.filter(([q]) => q === p).map(([, o]) => o);
          for (const o of offsets) {
            expect(o, `partition ${p}: offset ${o} handled twice`).toBeGreaterThanOrEqual(HOLD);
            expect(o, `partition ${p}: offset ${o} handled twice`).toBeLessThan(deliveredAtKill[p]!);
          }
        }
        await guard(app.stop(), 60_000, 'stop');
        // Every commit the app believes made was made: the group has the end of every partition.
        expect(await withAdmin(fault.address, (a) => committedOffsets(a, group, topic))).toEqual(
          await withAdmin(fault.address, (a) => endOffsets(a, topic)),
        );
      } finally {
        held.open();
        await app.stop();
      }
    },
    (SOAK ? 90 + 240 : 5 + 240) * 1_000,
  );

  it('a stop while the consumer joins again after a crash (broker down) resolves, and no member of it is left in the group', async () => {
    await fault.start(); // the broker a test before may have left down
    const run = await consuming('stop-in-restart', 3, 3_000);
    const { app, old, started } = run;
    await app.start();
    await started.reach(300);
    await fault.kill();
    await guard(old.crashes.reach(1), 120_000, 'crash'); // kafkajs gave up on the dead broker
    await guard(old.runs.reach(2), 60_000, 'restart'); // and the subscription's restart is joining, the broker still dead
    const t0 = Date.now();
    await guard(app.stop(), 60_000, 'stop');
    const stopMs = Date.now() - t0;
    const fetchesAtStop = old.fetches.value;
    const runsAtStop = old.runs.value;

    await fault.start();
    await nextMemberReadsAll(run);
    expect(old.runs.value).toBe(runsAtStop); // nothing of the stopped app joined again
    expect(old.fetches.value).toBe(fetchesAtStop); // nor read
    console.log(`stop during a restart, broker down: ${stopMs} ms (shutdownTimeoutMs 5000)`);
  }, 300_000);

  // The child imports dist/: run `npm run build` first.
  it('a process whose app stopped while its consumer was crashing (broker dead) exits', async () => {
    await fault.start();
    const topic = uniqueTopic('stop-exit');
    await kafka().createTopic(topic, 3);
    await produce(fault.address, topic, spread(8_000, 3));
    const child = spawn(process.execPath, ['test/fixtures/kafka-stop-child.mjs', fault.address, topic], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let stoppedAt = 0;
    const stopped = new Gate();
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (text.includes('handling')) void fault.kill();
      if (text.includes('stopped')) {
        stoppedAt = Date.now();
        stopped.open();
      }
    });
    try {
      await guard(stopped.promise, 180_000, 'the child stopping its app');
      // kafkajs may still be waiting for an answer it asked for before the stop (its retries end it); it
      // must not go on crashing and restarting.
      expect(await guard(exited, 60_000, 'the child exiting after its app stopped')).toBe(0);
      console.log(`process exit ${Date.now() - stoppedAt} ms after stop() resolved, the broker dead`);
    } finally {
      child.kill('SIGKILL');
      await fault.start();
    }
  }, 300_000);

  // Paused: every request hangs; killed: refused, kafkajs retrying and not yet given up.
  it.each(['paused (SIGSTOP)', 'just killed'])(
    'a stop while the broker is %s resolves; once the broker is back, the group is free for the next member',
    async (state) => {
      await fault.start();
      const paused = state.startsWith('paused');
      const run = await consuming('stop-fault', 2, 2_000);
      const { app, started } = run;
      await app.start();
      await started.reach(200);
      if (paused) fault.pause();
      else await fault.kill();
      let stopMs: number;
      try {
        const t0 = Date.now();
        await guard(app.stop(), 60_000, 'stop');
        stopMs = Date.now() - t0;
      } finally {
        if (paused) fault.resume();
        else await fault.start();
      }
      await nextMemberReadsAll(run);
      console.log(`stop with the broker ${state}: ${stopMs} ms (shutdownTimeoutMs 5000)`);
    },
    300_000,
  );

  // One deadline for the whole stop, on the app's clock: handlers that never end use all of it, and the
  // final commit and the leaving (the broker paused) may not add a timeout of their own. The real wait
  // guarded against here would be 10 minutes.
  it('a stop with handlers that never end and the broker paused resolves at its one deadline, on the app clock', async () => {
    await fault.start();
    const topic = uniqueTopic('stop-deadline');
    const group = `g-${topic}`;
    const broker = kafka();
    await broker.createTopic(topic, 2);
    const total = 200;
    await produce(fault.address, topic, spread(total, 2));
    const clock = new ManualClock();
    const hanging = new Counter();
    const stuck = subscriber(topic, async (_: { n: number }) => {
      hanging.add();
      await new Promise<never>(() => {}); // ignores ctx.signal
    })
      .workers(2)
      .build();
    const shutdownTimeoutMs = 600_000;
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs, clock }).withBroker(broker, (b) =>
      b.include(stuck),
    );
    await app.start();
    await hanging.reach(2);
    fault.pause();
    try {
      const stopping = app.stop();
      await clock.advance(shutdownTimeoutMs);
      await guard(stopping, 60_000, 'stop after its deadline passed on the app clock');
    } finally {
      fault.resume();
    }
    // What the stuck handlers held was never committed: the next member handles all of it.
    const handled = new Set<number>();
    const again = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(kafka(), (b) =>
      b.include(subscriber(topic, (v: { n: number }) => void handled.add(v.n)).build()),
    );
    try {
      await again.start();
      await guard(again.idle(), 120_000, 'idle of the next app');
      expect([...Array(total).keys()].filter((n) => !handled.has(n))).toEqual([]);
    } finally {
      await again.stop();
    }
  }, 300_000);
});
