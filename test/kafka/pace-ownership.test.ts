/**
 * Pace across instances on the real broker: two instances of one app in one consumer group, each with its
 * own Kafka store (one prefix), shards owned by partition. A window opened on one instance and moved by a
 * rebalance runs once, on the new owner of its partition, with every event; an instance that leaves for
 * good hands over every open window.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { App, ManualClock, jsonLogger, subscriber, type Broker, type RunInfo, type Store } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, groupSettled, kafkaClients } from './clients.js';
import { closeAll, kafkaBrokers } from './fixture.js';
import { testKafkaStore, uniquePrefix } from './store-fixture.js';

const PARTITIONS = 4;
const KEYS = 24;
const T0 = 1_000_000;

/** A store whose shards opened here can be waited for: how a test knows a rebalance reached this instance. */
function watched(store: Store) {
  const open = new Set<number>();
  let changed: () => void = () => {};
  const wrapped: Store = {
    shards: store.shards,
    ownership: store.ownership,
    snapshotEvery: store.snapshotEvery,
    open: () => store.open(),
    close: () => store.close(),
    log: (shard) => store.log(shard),
    openShard: async (shard) => {
      const log = await store.openShard!(shard);
      open.add(shard);
      changed();
      return log;
    },
    closeShard: async (shard) => {
      open.delete(shard);
      await store.closeShard!(shard);
    },
  };
  return {
    store: wrapped,
    /** Resolves once every shard is open here. */
    async ownsAll(): Promise<void> {
      while (open.size < PARTITIONS) await new Promise<void>((resolve) => (changed = resolve));
    },
  };
}

interface Seen {
  readonly instance: string;
  readonly run: RunInfo;
  readonly events: readonly { key: string; n: number }[];
}

describe.skipIf(!kafkaBrokers).each(kafkaClients)(
  'pace on Kafka, shards owned by partition ($name)',
  { timeout: 120_000 },
  (client) => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.allSettled(apps.splice(0).map((a) => a.stop()));
      await Promise.all([closeAll(), closePlatformatic()]);
    });

    /** An instance: its own broker client and store, the app `name`'s group, a batched subscriber of `topic`. */
    function instance(label: string, name: string, topic: string, prefix: string, clock: ManualClock, seen: Seen[]) {
      const shards = watched(testKafkaStore(prefix, { shards: PARTITIONS, ownership: 'partition' }, client.store));
      const store = shards.store;
      const app = new App({
        name,
        logger: jsonLogger({ level: 'error' }),
        clock,
        store,
        shutdownTimeoutMs: 10_000,
      }).withBroker(client.broker(), (b) =>
        b.include(
          subscriber(topic, (events: { key: string; n: number }[], ctx) => {
            seen.push({ instance: label, run: ctx.run!, events });
          })
            .name('ev')
            .workers(4)
            .pace({ batch: { wait: '1 s' } })
            .build(),
        ),
      );
      apps.push(app);
      return Object.assign(app, { ownsAll: () => shards.ownsAll() });
    }

    async function publish(broker: Broker, topic: string, from: number, to: number): Promise<void> {
      await Promise.all(
        Array.from({ length: KEYS }, async (_, k) => {
          for (let n = from; n < to; n++) await broker.publish(topic, { key: `k${k}`, n }, { key: `k${k}` });
        }),
      );
    }

    function expectOneRunPerKey(seen: readonly Seen[], events: number): void {
      const byKey = new Map<string, Seen[]>();
      for (const s of seen) byKey.set(s.run.key, [...(byKey.get(s.run.key) ?? []), s]);
      expect(byKey.size).toBe(KEYS);
      for (const [key, runs] of byKey) {
        expect(runs.length, key).toBe(1);
        expect(runs[0]!.events.map((e) => e.n)).toEqual(Array.from({ length: events }, (_, i) => i));
      }
    }

    it('a window open when a second instance joins runs once, on its partition’s new owner, with every event', async () => {
      const topic = uniqueTopic('owned');
      const producer = client.broker();
      await producer.createTopic(topic, PARTITIONS);
      const name = `owners-${uniquePrefix('a')}`;
      const prefix = uniquePrefix('owned');
      const clock = new ManualClock(T0);
      const seen: Seen[] = [];
      const a = instance('a', name, topic, prefix, clock, seen);
      await a.start();
      await publish(producer, topic, 0, 3);
      await a.idle(); // journaled in a's shards, every window open
      const b = instance('b', name, topic, prefix, clock, seen);
      await b.start(); // a hands every shard over; each instance restores its share from Kafka
      await groupSettled([a, b], PARTITIONS);
      await publish(producer, topic, 3, 6);
      await Promise.all([a.idle(), b.idle()]);
      await clock.advance(1_000);
      await Promise.all([a.idle(), b.idle()]);
      expectOneRunPerKey(seen, 6);
      expect(new Set(seen.map((s) => s.instance))).toEqual(new Set(['a', 'b']));
    });

    it('checks the topic has a partition per shard, at start: before joining, or once joined when the broker creates the topic', async () => {
      const paced = (topic: string) =>
        subscriber(topic, () => {})
          .name('ev')
          .pace({ batch: { wait: '1 s' } })
          .build();
      const start = (partitions: number) => {
        const store = testKafkaStore(
          uniquePrefix('count'),
          { shards: PARTITIONS, ownership: 'partition' },
          client.store,
        );
        const broker = client.broker({ createTopics: { partitions } });
        const app = new App({ name: uniquePrefix('count'), logger: jsonLogger({ level: 'error' }), store }).withBroker(
          broker,
          (b) => b.include(paced(uniqueTopic('count'))),
        );
        apps.push(app);
        return app.start();
      };
      await start(PARTITIONS); // created as it joins, with a partition per shard
      await expect(start(PARTITIONS - 1)).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(/has 3 partitions, got a store of 4 shards/),
      });
    });

    it('an instance that leaves for good hands every open window to the one that stays', async () => {
      const topic = uniqueTopic('owned-leave');
      const producer = client.broker();
      await producer.createTopic(topic, PARTITIONS);
      const name = `owners-${uniquePrefix('b')}`;
      const prefix = uniquePrefix('owned-leave');
      const clock = new ManualClock(T0);
      const seen: Seen[] = [];
      const a = instance('a', name, topic, prefix, clock, seen);
      const b = instance('b', name, topic, prefix, clock, seen);
      await a.start();
      await b.start();
      await groupSettled([a, b], PARTITIONS);
      await publish(producer, topic, 0, 4);
      await Promise.all([a.idle(), b.idle()]);
      await a.stop(); // for good: b takes every partition and restores a's shards
      await b.ownsAll();
      await b.idle();
      await clock.advance(1_000);
      await b.idle();
      expectOneRunPerKey(seen, 4);
      expect(new Set(seen.map((s) => s.instance))).toEqual(new Set(['b']));
    });
  },
);
