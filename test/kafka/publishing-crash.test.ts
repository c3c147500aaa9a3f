/**
 * A publishTo chain is at least once end to end across crashes: an app killed with SIGKILL at random points
 * (while handlers return and their publishes are under way), restarted on the same group each time, loses no
 * output — every input read is published on, because an input counts as done only once the broker has its
 * output. What was published and not yet committed when a kill came is published again: counted and logged,
 * not asserted (a Kafka transaction would drive it to 0).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber, topic } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { readPartition } from '../../src/brokers/kafka/store/partition-reader.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const N = 600;
const KILLS = 6;
const CHILD = new URL('../fixtures/publish-chain-child.mjs', import.meta.url).pathname;

describe.skipIf(!kafkaBrokers)('publishTo across SIGKILL', { timeout: 240_000 }, () => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  afterAll(async () => {
    await admin.disconnect();
    await closeAll();
  });

  it(`${KILLS} kills at random points lose none of ${N} outputs`, async () => {
    const run = uniquePrefix('chain-kill');
    const [input, output, group] = [`${run}.in`, `${run}.out`, `${run}-app`];
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [input, output].map((t) => ({ topic: t, numPartitions: 3, replicationFactor: 1 })),
    });
    const producer = testKafka();
    await Promise.all(Array.from({ length: N }, (_, id) => producer.publish(input, { id }, { key: String(id) })));
    const random = seeded(Number.parseInt(run.slice(-8), 16));
    for (let k = 0; k < KILLS; k++)
      await killAfterAcks(CHILD, [kafkaBrokers!, group, input, output], 50 + Math.floor(random() * 100));
    // The last instance runs until nothing is left to read.
    const app = new App({ name: group, logger: silentLogger }).withBroker(testKafka(), (b) =>
      b.include(
        subscriber(topic<{ id: number }>(input), (v) => ({ id: v.id }))
          .publishTo(topic(output))
          .workers(8),
      ),
    );
    await app.start();
    await app.idle();
    await app.stop();
    const ids: number[] = [];
    for (const partition of [0, 1, 2])
      await readPartition(
        { kafka, admin, topic: output, partition, groupPrefix: `${output}.read`, until: 'end', log: silentLogger },
        (m) => ids.push((JSON.parse(m.value!.toString()) as { id: number }).id),
      );
    const distinct = new Set(ids);
    expect([...distinct].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    console.log(`publishTo across ${KILLS} SIGKILLs: ${N} outputs, ${ids.length - distinct.size} published twice`);
  });
});
