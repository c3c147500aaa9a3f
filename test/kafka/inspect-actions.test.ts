/**
 * The inspect API's actions on the real broker, on each client: pause, resume and cancel of a paced subscriber
 * whose shards live in the Kafka store (a pause survives a restart on the same store), and dead letters read
 * from their topic and replayed once to their source.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { App, HandlerOutcome, ManualClock, REPLAY_HEADER, jsonLogger, subscriber } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closePlatformatic, groupSettled, kafkaClients, type TestClient } from './clients.js';
import { closeAll, kafkaBrokers } from './fixture.js';
import { testKafkaStore, uniquePrefix } from './store-fixture.js';

const PARTITIONS = 2;
const T0 = 1_000_000;

describe.skipIf(!kafkaBrokers).each(kafkaClients)(
  'inspect actions on Kafka ($name)',
  { timeout: 120_000 },
  (client) => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.allSettled(apps.splice(0).map((a) => a.stop()));
      await Promise.all([closeAll(), closePlatformatic()]);
    });

    function paced(c: TestClient, name: string, topic: string, prefix: string, clock: ManualClock, ran: string[]) {
      const store = testKafkaStore(prefix, { shards: PARTITIONS, ownership: 'partition' }, c.store);
      const app = new App({ name, logger: jsonLogger({ level: 'error' }), clock, store, shutdownTimeoutMs: 10_000 });
      app.withBroker(c.broker(), (b) =>
        b.include(
          subscriber(topic, (_e: unknown, ctx) => void ran.push(ctx.run!.key))
            .name('ev')
            .pace({ debounce: '1 s' })
            .build(),
        ),
      );
      apps.push(app);
      return app;
    }

    it('a pause in the Kafka store holds runs across a restart; resume starts them; cancel drops a window', async () => {
      const topic = uniqueTopic('paused');
      await client.broker().createTopic(topic, PARTITIONS);
      const name = `paused-${uniquePrefix('p')}`;
      const prefix = uniquePrefix('paused');
      const clock = new ManualClock(T0);
      const ran: string[] = [];
      const first = paced(client, name, topic, prefix, clock, ran);
      await first.start();
      await groupSettled([first], PARTITIONS);
      expect(await first.pause('ev')).toEqual([0, 1]);
      for (const key of ['a', 'b', 'c']) await first.send('ev', { key, event: { key } });
      const dropped = (await first.send('ev', { key: 'd', event: {} })) as { runId: string };
      expect(await first.cancel('ev', dropped.runId)).toBe('window');
      await clock.advance(1_000);
      await first.idle();
      expect(ran).toEqual([]);
      const waiting = await first.inspectRuns('ev', { stage: 'waiting' });
      expect(waiting.runs.map((r) => r.key).sort()).toEqual(['a', 'b', 'c']);
      expect(waiting.runs.every((r) => r.waitingFor === 'pause')).toBe(true);
      await first.stop();

      const second = paced(client, name, topic, prefix, clock, ran);
      await second.start();
      await groupSettled([second], PARTITIONS);
      expect((await second.inspect()).subscribers[0]!.pace!.paused).toBe(true);
      expect(ran).toEqual([]);
      expect(await second.resume('ev')).toEqual([0, 1]);
      await second.idle();
      expect(ran.sort()).toEqual(['a', 'b', 'c']);
    });

    it('two instances: either pauses, views and cancels every shard, asking the owner; a pause goes with a moved shard', async () => {
      const topic = uniqueTopic('paused2');
      await client.broker().createTopic(topic, PARTITIONS);
      const name = `paused2-${uniquePrefix('p')}`;
      const prefix = uniquePrefix('paused2');
      const clock = new ManualClock(T0);
      const ran: string[] = [];
      const [a, b] = [paced(client, name, topic, prefix, clock, ran), paced(client, name, topic, prefix, clock, ran)];
      await a.start();
      await b.start();
      await groupSettled([a, b], PARTITIONS);
      const ownedByA = (await a.health()).subscribers[0]!.assignedPartitions;
      expect(ownedByA).toHaveLength(1); // one each
      expect(await a.pause('ev')).toEqual([0, 1]); // its own shard, and b's asked of b
      expect((await b.inspect()).subscribers[0]!.pace!.shards.map((s) => s.paused)).toEqual([true, true]);
      const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
      const receipts = await Promise.all(keys.map((key) => a.send('ev', { key, event: { key } })));
      await clock.advance(1_000);
      await Promise.all([a.idle(), b.idle()]);
      expect(ran).toEqual([]);
      const seen: string[] = [];
      let after: string | undefined;
      do {
        const page = await a.inspectRuns('ev', { stage: 'waiting', limit: 3, ...(after ? { after } : {}) });
        seen.push(...page.runs.map((r) => r.key));
        after = page.next;
      } while (after !== undefined);
      expect(seen.sort()).toEqual([...keys].sort());
      for (const key of keys) expect((await b.inspectKey('ev', key))?.runs[0]?.waitingFor).toBe('pause');
      const cancelled = (receipts[0] as { runId: string }).runId;
      expect(await b.cancel('ev', cancelled)).toBe('waiting');

      // b leaves: a takes its shard over, restored from the store, paused as it was.
      await b.stop();
      await groupSettled([a], PARTITIONS);
      expect((await a.inspect()).subscribers[0]!.pace!.shards.map((s) => s.paused)).toEqual([true, true]);
      await clock.advance(0);
      await a.idle();
      expect(ran).toEqual([]);
      expect(await a.resume('ev')).toEqual([0, 1]);
      await a.idle();
      expect(ran.sort()).toEqual(keys.slice(1).sort());
    });

    it('dead letters are read from their topic and replayed to their source once, however often asked', async () => {
      const topic = uniqueTopic('replay');
      const broker = client.broker();
      await broker.createTopic(topic, PARTITIONS);
      await broker.createTopic(`${topic}.dlq`, PARTITIONS);
      const refused = new Set([1, 3]);
      const handled: { n: number; replay: boolean }[] = [];
      const app = new App({ name: `replay-${uniquePrefix('r')}`, logger: jsonLogger({ level: 'error' }) }).withBroker(
        broker,
        (b) =>
          b.include(
            subscriber(topic, (v: { n: number }, ctx) => {
              if (refused.has(v.n)) return HandlerOutcome.reject(`n ${v.n} refused`);
              handled.push({ n: v.n, replay: ctx.message.headers[REPLAY_HEADER] !== undefined });
              return undefined;
            })
              .name('ev')
              .build(),
          ),
      );
      apps.push(app);
      await app.start();
      for (let n = 0; n < 4; n++) await broker.publish(topic, { n }, { key: `k${n}` });
      await app.idle();
      const letters = (await app.inspectDeadLetters('ev')).letters;
      expect(letters.map((l) => l.key).sort()).toEqual(['k1', 'k3']);
      expect(letters.every((l) => l.sourceTopic === topic && /refused$/.test(l.reason))).toBe(true);
      refused.clear();
      expect(await app.replayDeadLetters('ev')).toEqual({ replayed: 2, skipped: 0, unreplayable: 0, scanned: 2 });
      expect(await app.replayDeadLetters('ev')).toEqual({ replayed: 0, skipped: 2, unreplayable: 0, scanned: 2 });
      await app.idle();
      expect(
        handled
          .filter((h) => h.replay)
          .map((h) => h.n)
          .sort(),
      ).toEqual([1, 3]);
      expect((await app.inspectDeadLetters('ev')).letters.every((l) => l.replayed)).toBe(true);
    });
  },
);
