/**
 * The suite of a publishTo chain across crashes: an app killed with SIGKILL at random points (while handlers return and
 * their publishes are under way), restarted on the same group each time.
 *
 * - At least once, as it is: no output is lost, because an input counts as done only once the broker has its
 *   output. What was published and not yet committed when a kill came is published again: counted and
 *   logged, not asserted.
 * - Marked `exactlyOnce`: a reader that reads committed finds every output once, and nothing of the attempts
 *   that failed after publishing (the child's every seventh input fails its first attempt so).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber, topic } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { closePlatformatic, groupSettled, platformaticRuns, type TestClient } from './clients.js';
import { closeAll, createTopics, kafkaBrokers, readCommitted } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const N = 600;
const CHILD = new URL('../fixtures/publish-chain-child.mjs', import.meta.url).pathname;

interface Output {
  readonly id: number;
  readonly ghost?: boolean;
}

/** The suite on `client`: each test kills the child `kills` times. */
export function publishingCrashSuite(client: TestClient, kills: number): void {
  describe.skipIf(!kafkaBrokers || (client.arg !== 'kafkajs' && !platformaticRuns))(
    `publishTo across SIGKILL (${client.name})`,
    { timeout: 240_000 },
    () => {
      const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      afterAll(async () => {
        await admin.disconnect();
        await Promise.all([closeAll(), closePlatformatic()]);
      });

      /**
       * Publishes N inputs, kills the child `kills` times, each after `acks(random)` acks, lets a last instance
       * (marked `exactlyOnce` when `exactlyOnce`) handle what is left, and reads back every output committed.
       */
      async function killAndRead(name: string, exactlyOnce: boolean, acks: (r: number) => number): Promise<Output[]> {
        const run = uniquePrefix(name);
        const [input, output, group] = [`${run}.in`, `${run}.out`, `${run}-app`];
        await admin.connect();
        await createTopics(
          admin,
          [input, output].map((t) => ({ topic: t, numPartitions: 3, replicationFactor: 1 })),
        );
        const producer = client.broker();
        await Promise.all(Array.from({ length: N }, (_, id) => producer.publish(input, { id }, { key: String(id) })));
        const random = seeded(Number.parseInt(run.slice(-8), 16));
        const mode = exactlyOnce ? 'exactly-once' : 'at-least-once';
        for (let k = 0; k < kills; k++)
          await killAfterAcks(CHILD, [kafkaBrokers!, group, input, output, mode, client.arg], acks(random()));
        // The last instance runs until nothing is left to read.
        const last = subscriber(topic<{ id: number }>(input), (v) => ({ id: v.id }))
          .publishTo(topic(output))
          .workers(8);
        const app = new App({ name: group, logger: silentLogger }).withBroker(client.broker(), (b) =>
          b.include(exactlyOnce ? last.exactlyOnce() : last),
        );
        await app.start();
        // Under KIP-848 a killed member's partitions come to this one only once that member's session ended.
        await groupSettled([app], 3);
        await app.stop();
        return readCommitted<Output>(kafka, admin, output, 3);
      }

      it(`${kills} kills at random points lose none of ${N} outputs`, async () => {
        const ids = (await killAndRead('chain-kill', false, (r) => 50 + Math.floor(r * 100))).map((o) => o.id);
        const distinct = new Set(ids);
        expect([...distinct].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
        console.log(`publishTo across ${kills} SIGKILLs: ${N} outputs, ${ids.length - distinct.size} published twice`);
      });

      it(`exactlyOnce: ${kills} kills at random points leave each of ${N} outputs once, and no failed attempt's`, async () => {
        const outputs = await killAndRead('eos-kill', true, (r) => 40 + Math.floor(r * 80));
        expect(outputs.filter((o) => o.ghost === true)).toEqual([]);
        const ids = outputs.map((o) => o.id).sort((a, b) => a - b);
        expect(ids).toEqual(Array.from({ length: N }, (_, i) => i)); // each once: none lost, none twice
      });
    },
  );
}
