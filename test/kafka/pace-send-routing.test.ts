/**
 * `app.send` from any instance on the real broker: two instances of one app in one consumer group, each with
 * its own Kafka store (one prefix), shards owned by partition. A start whose key's partition the other instance
 * owns goes through the store's requests topic to that owner, and its receipt comes back on the replies topic.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { App, ManualClock, jsonLogger, subscriber, type Receipt, type RunInfo } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { runIdOf } from '../helpers.js';
import { valueOf } from '../telemetry/metrics-text.js';
import { closePlatformatic, groupSettled, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers, testKafka } from './fixture.js';
import { testKafkaStore, uniquePrefix } from './store-fixture.js';

const PARTITIONS = 4;
const KEYS = 20;
const T0 = 1_000_000;

describe.skipIf(!kafkaBrokers).each(kafkaClients)(
  'app.send routed to the owner on Kafka ($name)',
  { timeout: 120_000 },
  (client) => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.allSettled(apps.splice(0).map((a) => a.stop()));
      await Promise.all([closeAll(), closePlatformatic()]);
    });

    function instance(
      label: string,
      name: string,
      topic: string,
      prefix: string,
      clock: ManualClock,
      seen: RunInfo[],
      events: unknown[][] = [],
      paceKey?: (value: { key: string }) => string,
    ) {
      const store = testKafkaStore(prefix, { shards: PARTITIONS, ownership: 'partition' }, client.store);
      const app = new App({ name, logger: jsonLogger({ level: 'error' }), clock, store, shutdownTimeoutMs: 10_000 });
      app.withBroker(client.broker(), (b) =>
        b.include(
          subscriber(topic, (batch: unknown[], ctx) => {
            seen.push(ctx.run!);
            events.push(batch);
          })
            .name('ev')
            .key(paceKey ? ({ value }) => paceKey(value as unknown as { key: string }) : ({ key }) => key)
            .workers(4)
            .pace({ batch: { wait: '1 s' } })
            .build(),
        ),
      );
      apps.push(app);
      return app;
    }

    it('sends spread over both instances: each key runs once, and each eventId sent again elsewhere is a duplicate', async () => {
      const topic = uniqueTopic('routed');
      await client.broker().createTopic(topic, PARTITIONS);
      const name = `routed-${uniquePrefix('r')}`;
      const prefix = uniquePrefix('routed');
      const clock = new ManualClock(T0);
      const seen: RunInfo[] = [];
      const both = [instance('a', name, topic, prefix, clock, seen), instance('b', name, topic, prefix, clock, seen)];
      for (const app of both) await app.start();
      await groupSettled(both, PARTITIONS);
      const receipts = await Promise.all(
        Array.from({ length: KEYS }, async (_, k): Promise<[Receipt, Receipt]> => {
          const start = { key: `key-${k}`, event: { k }, eventId: `event-${k}` };
          const first = await both[k % 2]!.send('ev', start);
          const again = await both[(k + 1) % 2]!.send('ev', start);
          return [first, again];
        }),
      );
      for (const [first, again] of receipts) {
        expect(first).toMatchObject({ kind: 'run', duplicate: false });
        expect(again).toEqual({ ...first, duplicate: true });
      }
      await clock.advance(1_000);
      await Promise.all(both.map((a) => a.idle()));
      expect(seen).toHaveLength(KEYS);
      const runOf = new Map(seen.map((r) => [r.key, r.id]));
      expect(runOf.size).toBe(KEYS);
      receipts.forEach(([first], k) => expect(runOf.get(`key-${k}`)).toBe(runIdOf(first)));
      // Each instance read the replies in a group of its own, deleted as it stops.
      const admin = testKafka().kafka.admin();
      await admin.connect();
      try {
        const replies = async () =>
          (await admin.listGroups()).groups.filter(
            (g) => g.groupId.startsWith(`${name}`) && g.groupId.includes('.replies.'),
          );
        expect(await replies()).toHaveLength(2);
        await Promise.all(both.map((a) => a.stop()));
        expect(await replies()).toEqual([]);
      } finally {
        await admin.disconnect();
      }
    });

    it('starts sent at once, each twice (a retry read in the same batch): the second is the first’s duplicate, each key runs once', async () => {
      const topic = uniqueTopic('together');
      await client.broker().createTopic(topic, PARTITIONS);
      const name = `together-${uniquePrefix('r')}`;
      const prefix = uniquePrefix('together');
      const clock = new ManualClock(T0);
      const seen: RunInfo[] = [];
      const events: unknown[][] = [];
      const both = [
        instance('a', name, topic, prefix, clock, seen, events),
        instance('b', name, topic, prefix, clock, seen, events),
      ];
      for (const app of both) await app.start();
      await groupSettled(both, PARTITIONS);
      // All sent in one turn from a: those routed to b go in one request per partition, and b reads them together.
      const sent = Array.from({ length: KEYS }, (_, k) => {
        const start = { key: `key-${k}`, eventId: `event-${k}` };
        return [
          both[0]!.send('ev', { ...start, event: { k } }),
          both[0]!.send('ev', { ...start, event: { k, again: 1 } }),
        ];
      });
      const receipts = await Promise.all(sent.map((pair) => Promise.all(pair)));
      for (const [first, again] of receipts) {
        // The first is answered `duplicate: false` unless its request was taken twice (a reply not heard, the
        // request read again: answered again, as recorded already); the second is always the first's duplicate.
        expect(first).toMatchObject({ kind: 'run' });
        expect(again).toEqual({ ...first, duplicate: true });
      }
      await clock.advance(1_000);
      await Promise.all(both.map((a) => a.idle()));
      expect(seen).toHaveLength(KEYS);
      const runOf = new Map(seen.map((r) => [r.key, r.id]));
      receipts.forEach(([first], k) => expect(runOf.get(`key-${k}`)).toBe(runIdOf(first!)));
      expect(events.flat().sort((x, y) => (x as { k: number }).k - (y as { k: number }).k)).toEqual(
        Array.from({ length: KEYS }, (_, k) => ({ k })),
      );
    });

    it('a pace key that is not the message key: a key’s events, through every partition, gather in one window on its owner', async () => {
      const topic = uniqueTopic('repartition');
      const producer = client.broker();
      await producer.createTopic(topic, PARTITIONS);
      const name = `repartition-${uniquePrefix('r')}`;
      const prefix = uniquePrefix('repartition');
      const clock = new ManualClock(T0);
      const seen: RunInfo[] = [];
      const events: unknown[][] = [];
      const byEvent = (value: { key: string }) => value.key;
      const both = [
        instance('a', name, topic, prefix, clock, seen, events, byEvent),
        instance('b', name, topic, prefix, clock, seen, events, byEvent),
      ];
      for (const app of both) await app.start();
      await groupSettled(both, PARTITIONS);
      // Every event of a key under a message key of its own: a key's events are spread over the partitions.
      await Promise.all(
        Array.from({ length: KEYS }, async (_, k) => {
          for (let n = 0; n < 4; n++) await producer.publish(topic, { key: `key-${k}`, n }, { key: `m-${k}-${n}` });
        }),
      );
      await Promise.all(both.map((a) => a.idle())); // read, and forwarded events taken by their owners
      await clock.advance(1_000);
      await Promise.all(both.map((a) => a.idle()));
      expect(new Set(seen.map((r) => r.key)).size).toBe(KEYS);
      expect(seen).toHaveLength(KEYS); // one run a key
      for (const batch of events) expect((batch as { n: number }[]).map((e) => e.n).sort()).toEqual([0, 1, 2, 3]);
    });

    it('a forwarded delivery that pace drops is counted as dropped, once, by the instance that owns its key', async () => {
      const topic = uniqueTopic('forward-drop');
      const producer = client.broker();
      await producer.createTopic(topic, PARTITIONS);
      const name = `forward-drop-${uniquePrefix('r')}`;
      const prefix = uniquePrefix('forward-drop');
      const clock = new ManualClock(T0);
      const registries = [new Registry(), new Registry()];
      const both = registries.map((registry) => {
        const store = testKafkaStore(prefix, { shards: PARTITIONS, ownership: 'partition' }, client.store);
        const app = new App({ name, logger: jsonLogger({ level: 'error' }), clock, store, metrics: { registry } });
        app.withBroker(client.broker(), (b) =>
          b.include(
            subscriber(topic, async () => {})
              .name('ev')
              .key(({ value }) => (value as { key: string }).key)
              .pace({ drop: { max: 1, per: '1 hour' } })
              .build(),
          ),
        );
        apps.push(app);
        return app;
      });
      for (const app of both) await app.start();
      await groupSettled(both, PARTITIONS);
      // A key's 4 events under 4 message keys: most are read on a partition other than the pace key's.
      for (let k = 0; k < KEYS; k++)
        for (let n = 0; n < 4; n++) await producer.publish(topic, { key: `key-${k}`, n }, { key: `m-${k}-${n}` });
      await Promise.all(both.map((a) => a.idle()));
      const total = async (outcome: string) => {
        let sum = 0;
        for (const registry of registries)
          sum += valueOf(await registry.metrics(), 'sluice_handled_total', { subscriber: 'ev', topic, outcome }) ?? 0;
        return sum;
      };
      expect([await total('ack'), await total('dropped')]).toEqual([KEYS, 3 * KEYS]);
    });
  },
);
