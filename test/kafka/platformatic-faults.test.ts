/**
 * The second Kafka client on a broker that dies: a broker of this suite's own (test/kafka/fault-broker.ts,
 * port 19196 or KAFKA_PLATFORMATIC_FAULT_PORT) is not started yet when a client first connects (the next
 * connect tries again), SIGKILLed mid-consumption and started again on its data, or paused (SIGSTOP) under a
 * stopping app. The consumer's stream fails; the adapter opens a new one after a backoff, and nothing is lost.
 * A stop resolves whatever the broker does, within its one deadline.
 */
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import type { PlatformaticKafkaBroker, PlatformaticKafkaBrokerOptions } from '../../src/brokers/platformatic/index.js';
import { nodeRuns } from '../../src/brokers/platformatic/platformatic.js';
import { App, ManualClock, silentLogger, subscriber, type Logger } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { Counter } from '../helpers.js';
import { SOAK } from '../soak.js';
import { spawn } from 'node:child_process';
import { groupSettled } from './clients.js';
import { FaultBroker, canRunOwnBroker, guard, ownBrokerPort } from './fault-broker.js';
import { kafkaBrokers } from './fixture.js';

const runs = nodeRuns(process.versions.node);
const { PlatformaticKafkaBroker: Broker } = runs
  ? await import('../../src/brokers/platformatic/index.js')
  : { PlatformaticKafkaBroker: undefined };

describe.skipIf(!kafkaBrokers || !canRunOwnBroker || !runs)('kafka on @platformatic/kafka: a broker that dies', () => {
  const fault = new FaultBroker(ownBrokerPort('KAFKA_PLATFORMATIC_FAULT_PORT', 19196));
  const made: PlatformaticKafkaBroker[] = [];
  afterAll(async () => {
    await Promise.all(made.map((b) => b.close()));
    fault.stop();
  });
  const client = (
    groupProtocol: 'classic' | 'consumer' = 'classic',
    logger: Logger = silentLogger,
    platformatic?: PlatformaticKafkaBrokerOptions['platformatic'],
  ) => {
    const b: PlatformaticKafkaBroker = new Broker!({
      brokers: [`127.0.0.1:${fault.port}`],
      logger,
      groupProtocol,
      platformatic,
      consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 15_000 },
    });
    made.push(b);
    return b;
  };

  const plain = () =>
    new Kafka({
      clientId: 'plain',
      brokers: [fault.address],
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2_000 },
    });

  it('a connect that failed (no broker yet) is tried again by the next one', async () => {
    await fault.kill(); // one left from an earlier run
    const broker = client();
    await expect(broker.connect()).rejects.toThrow();
    await fault.start(true);
    await broker.connect();
    await broker.createTopic(uniqueTopic('pk-after-failed-connect'), 1);
  }, 120_000);

  // The 30 and 90 s outages run in the soak (`npm run test:soak`); `npm test` has the 3 s one.
  it.each(SOAK ? [3, 30, 90] : [3])(
    'a broker killed mid-consumption and started again %i s later: the consumer reads on, nothing is lost',
    async (outageSeconds) => {
      if (fault.pid() === 0) await fault.start(true); // the test above left it running
      const broker = client();
      const topic = uniqueTopic('pk-killed');
      await broker.createTopic(topic, 3);
      const handled = new Set<number>();
      let killAt: (() => void) | undefined;
      const halfway = new Promise<void>((resolve) => (killAt = resolve));
      const app = new App({ name: `g-${topic}`, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(
        broker,
        (b) =>
          b.include(
            subscriber(topic, (v: { n: number }) => {
              handled.add(v.n);
              if (handled.size === 100) killAt?.();
            })
              .workers(2)
              .build(),
          ),
      );
      await app.start();
      for (let n = 0; n < 300; n++) await broker.publish(topic, { n }, { partition: n % 3 });
      await halfway;
      await fault.kill();
      // The outage itself (not a wait for a condition): the consumer's stream fails while the broker is away.
      await new Promise((resolve) => setTimeout(resolve, outageSeconds * 1_000));
      await fault.start();
      for (let n = 300; n < 400; n++) await broker.publish(topic, { n }, { partition: n % 3 });
      await app.idle();
      expect([...Array(400).keys()].filter((n) => !handled.has(n))).toEqual([]);
      await app.stop();
      // Every commit the app believed made was made: the group has the end of every partition.
      const admin = plain().admin();
      await admin.connect();
      try {
        const committed = (await admin.fetchOffsets({ groupId: `g-${topic}`, topics: [topic] }))[0]!.partitions;
        const ends = await admin.fetchTopicOffsets(topic);
        expect(new Map(committed.map((p) => [p.partition, p.offset]))).toEqual(
          new Map(ends.map((o) => [o.partition, o.high])),
        );
      } finally {
        await admin.disconnect();
      }
    },
    (SOAK ? 90 + 180 : 3 + 180) * 1_000,
  );

  // The 40 s outage (past what the client's producer used to retry) runs in the soak; `npm test` has the 3 s one.
  it.each(SOAK ? [3, 40] : [3])(
    'the Kafka store’s appends wait out a broker away %i s, then are durable, and the log goes on',
    async (outageSeconds) => {
      if (fault.pid() === 0) await fault.start(true);
      const { platformaticKafkaStore } = await import('../../src/brokers/platformatic/index.js');
      const prefix = uniqueTopic('pk-store-away');
      const make = () =>
        platformaticKafkaStore({
          brokers: [fault.address],
          prefix,
          shards: 1,
          replicationFactor: 1,
          ownership: 'all',
          logger: silentLogger,
        });
      const store = make();
      await store.open();
      const log = store.log(0);
      expect(await log.append(Buffer.from('before'))).toBe(1);
      await fault.kill();
      const during = ['a', 'b', 'c'].map((r) => log.append(Buffer.from(r)));
      let settled = false;
      void Promise.allSettled(during).then(() => (settled = true));
      // The outage itself (not a wait for a condition): the appends are under way while the broker is away.
      await new Promise((resolve) => setTimeout(resolve, outageSeconds * 1_000));
      expect(settled).toBe(false);
      await fault.start();
      expect(await Promise.all(during)).toEqual([2, 3, 4]);
      expect(await log.append(Buffer.from('after'))).toBe(5);
      await store.close();
      // The next owner reads them all.
      const next = make();
      await next.open();
      const read: string[] = [];
      await next.log(0).replay(1, (_lsn, r) => void read.push(Buffer.from(r).toString()));
      await next.close();
      expect(read).toEqual(['before', 'a', 'b', 'c', 'after']);
    },
    (SOAK ? 40 + 120 : 3 + 120) * 1_000,
  );

  /** A topic of `partitions` on the killable broker, holding messages `{ n }` for n below `total`, n % partitions its partition. */
  async function filled(name: string, partitions: number, total: number): Promise<string> {
    const topic = uniqueTopic(name);
    await client().createTopic(topic, partitions);
    const producer = plain().producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const messages = Array.from({ length: total }, (_, n) => ({
      partition: n % partitions,
      value: JSON.stringify({ n }),
    }));
    for (let i = 0; i < total; i += 2_000) await producer.send({ topic, messages: messages.slice(i, i + 2_000) });
    await producer.disconnect();
    return topic;
  }

  /**
   * An app (not started) of `group` reading `topic` through `broker` with two workers: the deliveries it
   * started, and the messages `{ n }` it finished.
   */
  function reading(group: string, topic: string, broker: PlatformaticKafkaBroker) {
    const started = new Counter();
    const handled = new Set<number>();
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
      b.include(
        subscriber(topic, async (v: { n: number }) => {
          started.add();
          await new Promise<void>((resolve) => setImmediate(resolve));
          handled.add(v.n);
        })
          .workers(2)
          .build(),
      ),
    );
    return { app, started, handled };
  }

  /**
   * A fresh app of `group` reads every message of `topic` below `total` that `handled` (what the stopped app
   * finished) lacks, and ends as the group's only member.
   */
  async function nextMemberReadsAll(
    group: string,
    topic: string,
    partitions: number,
    total: number,
    handled: Set<number>,
    classic: boolean,
  ): Promise<void> {
    const again = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(
      client(classic ? 'classic' : 'consumer'),
      (b) => b.include(subscriber(topic, (v: { n: number }) => void handled.add(v.n)).build()),
    );
    try {
      await again.start();
      // Under KIP-848 the partitions come with heartbeats after the join: idle counts only those owned.
      await guard(groupSettled([again], partitions), 120_000, 'the next app owning every partition, then idle');
      expect([...Array(total).keys()].filter((n) => !handled.has(n))).toEqual([]);
      if (classic) {
        // The stopped member left the group: the next one is alone in it (a classic group's members are listed).
        const admin = plain().admin();
        await admin.connect();
        try {
          expect((await admin.describeGroups([group])).groups[0]!.members).toHaveLength(1);
        } finally {
          await admin.disconnect();
        }
      }
    } finally {
      await again.stop();
    }
  }

  // Paused: every request hangs; killed: refused, the client reconnecting. One protocol each.
  it.each([
    ['paused (SIGSTOP)', 'consumer'],
    ['just killed', 'classic'],
  ] as const)(
    'a stop while the broker is %s (%s protocol) resolves; once the broker is back, the next member reads what it left',
    async (state, groupProtocol) => {
      await fault.start();
      const paused = state.startsWith('paused');
      const total = 2_000;
      const topic = await filled('pk-stop-fault', 2, total);
      const group = `g-${topic}`;
      const { app, started, handled } = reading(group, topic, client(groupProtocol));
      await app.start();
      await guard(started.reach(200), 60_000, 'the first 200 deliveries');
      if (paused) fault.pause();
      else await fault.kill();
      try {
        await guard(app.stop(), 60_000, 'stop');
      } finally {
        if (paused) fault.resume();
        else await fault.start();
      }
      await nextMemberReadsAll(group, topic, 2, total, handled, groupProtocol === 'classic');
    },
    300_000,
  );

  // One deadline for the whole stop, on the app's clock: handlers that never end use all of it, and the final
  // commit and the leaving (the broker paused) add no timeout of their own. The real wait would be 10 minutes.
  it('a stop with handlers that never end and the broker paused resolves at its one deadline, on the app clock', async () => {
    await fault.start();
    const total = 200;
    const topic = await filled('pk-stop-deadline', 2, total);
    const group = `g-${topic}`;
    const clock = new ManualClock();
    const hanging = new Counter();
    const stuck = subscriber(topic, async (_: { n: number }) => {
      hanging.add();
      await new Promise<never>(() => {}); // ignores ctx.signal
    })
      .workers(2)
      .build();
    const shutdownTimeoutMs = 600_000;
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs, clock }).withBroker(
      client('consumer'),
      (b) => b.include(stuck),
    );
    await app.start();
    await guard(hanging.reach(2), 60_000, 'two handlers hanging');
    fault.pause();
    try {
      const stopping = app.stop();
      await clock.advance(shutdownTimeoutMs);
      await guard(stopping, 60_000, 'stop after its deadline passed on the app clock');
    } finally {
      fault.resume();
    }
    // What the stuck handlers held was never committed: the next member handles all of it.
    await nextMemberReadsAll(group, topic, 2, total, new Set(), false);
  }, 300_000);

  /** A logger that counts the lines it is told, by message: what a test waits on for the adapter's restarts. */
  function countingLogger(): Logger & { told(message: string): Counter } {
    const counts = new Map<string, Counter>();
    const told = (message: string): Counter => {
      let c = counts.get(message);
      if (c === undefined) counts.set(message, (c = new Counter()));
      return c;
    };
    const line = (message: string): void => void told(message).add();
    const logger: Logger = { debug: line, info: line, warn: line, error: line, child: () => logger };
    return Object.assign(logger, { told });
  }

  it('a stop while the consumer restarts after a crash (broker dead) resolves, and nothing of it joins again', async () => {
    await fault.start();
    const total = 3_000;
    const topic = await filled('pk-stop-in-restart', 3, total);
    const group = `g-${topic}`;
    const log = countingLogger();
    // Few retries: the client gives up on the dead broker soon (its stream fails, its commits fail).
    const { app, started, handled } = reading(group, topic, client('classic', log, { retries: 1, retryDelay: 200 }));
    await app.start();
    await guard(started.reach(300), 60_000, 'the first 300 deliveries');
    await fault.kill();
    await guard(log.told('kafka consumer crashed').reach(1), 120_000, 'the stream failing');
    await guard(log.told('kafka consumer restarting after a crash').reach(1), 60_000, 'the restart');
    await guard(app.stop(), 60_000, 'stop');
    const restartsAtStop = log.told('kafka consumer restarting after a crash').value;
    await fault.start();
    await nextMemberReadsAll(group, topic, 3, total, handled, true);
    expect(log.told('kafka consumer restarting after a crash').value).toBe(restartsAtStop);
  }, 300_000);

  // The child imports dist/: run `npm run build` first.
  it('a process whose app stopped while its consumer was crashing (broker dead) exits', async () => {
    await fault.start();
    const topic = await filled('pk-stop-exit', 3, 8_000);
    const child = spawn(
      process.execPath,
      ['test/fixtures/kafka-stop-child.mjs', fault.address, topic, 'platformatic'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let stopped!: () => void;
    const stopping = new Promise<void>((resolve) => (stopped = resolve));
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (text.includes('handling')) void fault.kill();
      if (text.includes('stopped')) stopped();
    });
    try {
      await guard(stopping, 180_000, 'the child stopping its app');
      expect(await guard(exited, 60_000, 'the child exiting after its app stopped')).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await fault.start();
    }
  }, 300_000);
});
