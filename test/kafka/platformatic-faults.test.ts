/**
 * The second Kafka client on a broker that dies: a broker of this suite's own (test/kafka/fault-broker.ts,
 * port 19196 or KAFKA_PLATFORMATIC_FAULT_PORT) is SIGKILLed mid-consumption and started again on its data.
 * The consumer's stream fails; the adapter opens a new one after a backoff, and nothing is lost.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { PlatformaticKafkaBroker } from '../../src/brokers/platformatic/index.js';
import { nodeRuns } from '../../src/brokers/platformatic/platformatic.js';
import { App, silentLogger, subscriber } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { FaultBroker, canRunOwnBroker, ownBrokerPort } from './fault-broker.js';
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
  const client = (): PlatformaticKafkaBroker => {
    const b = new Broker!({
      brokers: [`127.0.0.1:${fault.port}`],
      logger: silentLogger,
      consumer: { maxWaitTimeMs: 100, heartbeatIntervalMs: 300, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 15_000 },
    });
    made.push(b);
    return b;
  };

  it('a broker killed mid-consumption and started again: the consumer reads on, nothing is lost', async () => {
    await fault.kill(); // one left from an earlier run
    await fault.start(true);
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
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await fault.start();
    for (let n = 300; n < 400; n++) await broker.publish(topic, { n }, { partition: n % 3 });
    await app.idle();
    expect([...Array(400).keys()].filter((n) => !handled.has(n))).toEqual([]);
    await app.stop();
  }, 180_000);
});
