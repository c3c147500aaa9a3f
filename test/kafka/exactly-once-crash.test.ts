/**
 * Exactly-once from topic to topic across crashes: an `exactlyOnce` app killed with SIGKILL at random points
 * (handlers returning, publishes held, transactions under way), restarted on the same group each time, leaves
 * every output in the output topic once for a reader that reads committed, and no publish of a failed attempt.
 * The same kills without `exactlyOnce` publish some outputs twice (test/kafka/publishing-crash.test.ts).
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

describe.skipIf(!kafkaBrokers)('exactlyOnce across SIGKILL', { timeout: 240_000 }, () => {
  const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  afterAll(async () => {
    await admin.disconnect();
    await closeAll();
  });

  it(`${KILLS} kills at random points leave each of ${N} outputs once, and no failed attempt's`, async () => {
    const run = uniquePrefix('eos-kill');
    const [input, output, group] = [`${run}.in`, `${run}.out`, `${run}-app`];
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [input, output].map((t) => ({ topic: t, numPartitions: 3, replicationFactor: 1 })),
    });
    const producer = testKafka();
    await Promise.all(Array.from({ length: N }, (_, id) => producer.publish(input, { id }, { key: String(id) })));
    const random = seeded(Number.parseInt(run.slice(-8), 16));
    let acked = 0;
    for (let k = 0; k < KILLS; k++) {
      const acks = await killAfterAcks(
        CHILD,
        [kafkaBrokers!, group, input, output, 'exactly-once'],
        40 + Math.floor(random() * 80),
      );
      acked += acks.length;
    }
    // The last instance runs until nothing is left to read.
    const app = new App({ name: group, logger: silentLogger }).withBroker(testKafka(), (b) =>
      b.include(
        subscriber(topic<{ id: number }>(input), (v) => ({ id: v.id }))
          .publishTo(topic(output))
          .workers(8)
          .exactlyOnce(),
      ),
    );
    await app.start();
    await app.idle();
    await app.stop();
    const outputs: { id: number; ghost?: boolean }[] = [];
    for (const partition of [0, 1, 2])
      await readPartition(
        { kafka, admin, topic: output, partition, groupPrefix: `${output}.read`, until: 'end', log: silentLogger },
        (m) => outputs.push(JSON.parse(m.value!.toString()) as { id: number; ghost?: boolean }),
      );
    expect(outputs.filter((o) => o.ghost === true)).toEqual([]);
    const ids = outputs.map((o) => o.id).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: N }, (_, i) => i)); // each once: none lost, none twice
    console.log(`exactlyOnce across ${KILLS} SIGKILLs: ${N} outputs once each; the children acked ${acked}`);
  });
});
