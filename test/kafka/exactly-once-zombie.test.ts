/**
 * A zombie under exactlyOnce: a member frozen with SIGSTOP while it holds finished deliveries and publishes
 * under way (the child holds each publish up to 50 ms, and every tenth 1.5 s), past its session, so that its
 * partitions move to another instance, then thawed with SIGCONT. Opening a partition fences its earlier holder:
 * whatever the thawed member then tries to commit is refused, and a reader that reads committed finds each
 * output once, and nothing of the attempts that failed after publishing.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { App, silentLogger, subscriber, topic } from '../../src/index.js';
import { Kafka, logLevel } from '../../src/brokers/kafka/kafkajs.js';
import { closePlatformatic, kafkaClients } from './clients.js';
import { closeAll, createTopics, kafkaBrokers, readCommitted } from './fixture.js';
import { uniquePrefix } from './store-fixture.js';

const N = 300;
const MORE = 60;
const CHILD = new URL('../fixtures/publish-chain-child.mjs', import.meta.url).pathname;

interface Output {
  readonly id: number;
  readonly ghost?: boolean;
}

describe.skipIf(!kafkaBrokers).each(kafkaClients)(
  'exactlyOnce: a member frozen past its session ($name)',
  { timeout: 180_000 },
  (client) => {
    const kafka = new Kafka({ clientId: 'sluice-test', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    afterAll(async () => {
      await admin.disconnect();
      await Promise.all([closeAll(), closePlatformatic()]);
    });

    it('commits nothing once thawed: each output once, after its partitions moved and came back', async () => {
      const run = uniquePrefix('eos-zombie');
      const [input, output, group] = [`${run}.in`, `${run}.out`, `${run}-app`];
      await admin.connect();
      await createTopics(
        admin,
        [input, output].map((t) => ({ topic: t, numPartitions: 3, replicationFactor: 1 })),
      );
      const producer = client.broker();
      const publish = (from: number, to: number) =>
        Promise.all(
          Array.from({ length: to - from }, (_, i) =>
            producer.publish(input, { id: from + i }, { key: String(from + i) }),
          ),
        );
      await publish(0, N);

      // The zombie-to-be: frozen once it has acknowledged 40 handlers, its publishes and transactions under way.
      const child = spawn(process.execPath, [CHILD, kafkaBrokers!, group, input, output, 'exactly-once', client.arg], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      let acks = 0;
      await new Promise<void>((resolve) =>
        child.stdout.on('data', (d: Buffer) => {
          acks += d
            .toString()
            .split('\n')
            .filter((l) => l.startsWith('ack ')).length;
          if (acks >= 40 && !child.killed && child.signalCode === null) {
            child.kill('SIGSTOP');
            resolve();
          }
        }),
      );
      try {
        // Another instance takes every partition once the frozen member's session ends, and handles the rest.
        const other = new App({ name: group, logger: silentLogger }).withBroker(client.broker(), (b) =>
          b.include(
            subscriber(topic<{ id: number }>(input), (v) => ({ id: v.id }))
              .publishTo(topic(output, { key: (o: Output) => String(o.id) }))
              .workers(8)
              .exactlyOnce(),
          ),
        );
        await other.start();
        await other.idle();
        child.kill('SIGCONT'); // it wakes with its transactions of partitions it no longer holds
        await publish(N, N + MORE); // handled by whichever member the group now gives them to
        await vi.waitFor(
          async () => {
            const ids = new Set((await readCommitted<Output>(kafka, admin, output, 3)).map((o) => o.id));
            if (ids.size < N + MORE) {
              const missing = Array.from({ length: N + MORE }, (_, i) => i).filter((i) => !ids.has(i));
              throw new Error(`${ids.size} of ${N + MORE} outputs so far; missing ${missing.join(' ')}`);
            }
          },
          { timeout: 120_000, interval: 250 },
        );
        await other.stop();
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      const outputs = await readCommitted<Output>(kafka, admin, output, 3);
      expect(outputs.filter((o) => o.ghost === true)).toEqual([]);
      const ids = outputs.map((o) => o.id).sort((a, b) => a - b);
      expect(ids).toEqual(Array.from({ length: N + MORE }, (_, i) => i)); // each once: none lost, none twice
    });
  },
);
