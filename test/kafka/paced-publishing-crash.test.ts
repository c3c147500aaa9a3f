/**
 * A paced subscriber marked `exactlyOnce`, on the Kafka store, across crashes: an app killed with SIGKILL at
 * random points (while runs return and their publishes are under way), restarted on the same group and store
 * each time. A run's publishes commit with its `done` record, in its shard's transaction: a reader that reads
 * committed finds each run's output once, each event in one output, and nothing of the attempts that failed
 * after publishing. The same child without `exactlyOnce` publishes runs twice (a run killed after publishing,
 * before its `done` record, runs again on restart). On each store client: kafkajs, and @platformatic/kafka (its
 * broker under the consumer group protocol) where Node runs it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { killAfterAcks } from '../crash-child.js';
import { seeded } from '../helpers.js';
import { closeAll, createTopics, kafkaBrokers, readCommitted, testKafka } from './fixture.js';
import { closePlatformatic, groupSettled, platformaticClients } from './clients.js';
import { storeClients, testKafkaStore, uniquePrefix } from './store-fixture.js';

const KEYS = 150;
const PER_KEY = 4;
/** Kills a test: fewer on @platformatic/kafka, whose next child waits for the killed member's session to end. */
const KILLS = { kafkajs: 5, platformatic: 3 };
const CHILD = new URL('../fixtures/paced-publish-child.mjs', import.meta.url).pathname;

interface Output {
  readonly run: string;
  readonly key: string;
  readonly ids?: readonly number[];
  readonly ghost?: boolean;
}

describe.skipIf(!kafkaBrokers).each(storeClients)(
  'a paced exactlyOnce subscriber across SIGKILL, on %s',
  { timeout: 240_000 },
  (client) => {
    const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    afterAll(async () => {
      await admin.disconnect();
      await Promise.all([closeAll(), closePlatformatic()]);
    });

    it(`${KILLS[client]} kills at random points leave each run's output once, every event in one`, async () => {
      const run = uniquePrefix('paced-eos');
      const [input, output, group, prefix] = [`${run}.in`, `${run}.out`, `${run}-app`, `${run}-store`];
      await admin.connect();
      await createTopics(
        admin,
        [input, output].map((t) => ({ topic: t, numPartitions: 3, replicationFactor: 1 })),
      );
      const producer = testKafka();
      const N = KEYS * PER_KEY;
      await Promise.all(
        Array.from({ length: N }, (_, id) => producer.publish(input, { id }, { key: `k${id % KEYS}` })),
      );
      const mode = process.env.PACED_EOS_MODE ?? 'exactly-once'; // `at-least-once` shows the test failing
      const random = seeded(Number.parseInt(run.slice(-8), 16));
      for (let k = 0; k < KILLS[client]; k++)
        await killAfterAcks(
          CHILD,
          [kafkaBrokers!, group, input, output, prefix, mode, client],
          5 + Math.floor(random() * 20),
        );
      // The last instance runs until nothing is left to read or to run.
      const last = subscriber(input, async (events: { id: number }[], ctx) => {
        const { id, key } = ctx.run!;
        await ctx.publish(output, { run: id, key, ids: events.map((e) => e.id) }, { key });
      })
        .pace({ batch: { max: PER_KEY, wait: '1 hour' } })
        .workers(8)
        .exactlyOnce();
      const store = testKafkaStore(prefix, { shards: 3, ownership: 'partition' }, client);
      const broker =
        client === 'kafkajs' ? testKafka() : platformaticClients.find((c) => c.arg === 'consumer')!.broker();
      const app = new App({ name: group, logger: silentLogger, store }).withBroker(broker, (b) => b.include(last));
      await app.start();
      await groupSettled([app], 3); // under KIP-848 a killed member's partitions come once its session ends
      await app.idle();
      await app.stop();

      const outputs = await readCommitted<Output>(kafka, admin, output, 3);
      expect(outputs.filter((o) => o.ghost === true)).toEqual([]);
      const runs = outputs.map((o) => o.run);
      expect(runs.length - new Set(runs).size).toBe(0); // no run published twice
      const ids = outputs.flatMap((o) => o.ids ?? []).sort((a, b) => a - b);
      expect(ids).toEqual(Array.from({ length: N }, (_, i) => i)); // each event in one output: none lost, none twice
      expect(outputs).toHaveLength(KEYS);
    });
  },
);
