import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App, subscriber } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { Counter, Gate } from '../helpers.js';
import { valueOf } from '../telemetry/metrics-text.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers } from './fixture.js';

describe.skipIf(!kafkaBrokers).each(kafkaClients)('metrics and health on Kafka ($name)', (client) => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));
  afterAll(() => Promise.all([closeAll(), closePlatformatic()]));

  it("reads each partition's lag (end offset less the group's committed one) from the broker when scraped", async () => {
    const topic = uniqueTopic('metrics-lag');
    const broker = client.broker({ createTopics: { partitions: 2 } });
    const gate = new Gate();
    const started = new Counter();
    const registry = new Registry();
    const sub = subscriber(topic, async () => {
      started.add();
      await gate.promise;
    }).name('lagging');
    const app = new App({ name: topic, logger: silentLogger, shutdownTimeoutMs: 5_000, metrics: { registry } });
    apps.push(app.withBroker(broker, (b) => b.include(sub.build())));
    await app.start();
    for (let i = 0; i < 3; i++) await broker.publish(topic, { i }, { partition: 0 });
    await broker.publish(topic, { i: 3 }, { partition: 1 });
    await started.reach(1); // one worker: the first runs, the rest wait, nothing is committed
    const labels = { subscriber: 'lagging', topic };
    const text = await registry.metrics();
    const lags = [0, 1].map((partition) => valueOf(text, 'sluice_consumer_lag', { ...labels, partition }));
    expect(lags).toEqual([3, 1]); // the group has committed nothing: each partition's end less its start
    expect(valueOf(text, 'sluice_assigned_partitions', labels)).toBe(2);
    expect(valueOf(text, 'sluice_rebalances_total', labels)).toBeGreaterThanOrEqual(1);
    expect(valueOf(text, 'sluice_in_flight', labels)).toBe(1);
    const health = await app.health();
    expect([health.status, health.subscribers[0]!.lag]).toEqual(['ready', 4]);
    gate.open();
    await app.idle();
    // Committed on the consumer's interval (200 ms here): polled, with a bound, until the broker has the commits.
    const deadline = Date.now() + 20_000;
    while ((await app.health()).subscribers[0]!.lag > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100)); // the poll's pace
    const after = await registry.metrics();
    expect([0, 1].map((partition) => valueOf(after, 'sluice_consumer_lag', { ...labels, partition }))).toEqual([0, 0]);
  }, 60_000);
});
