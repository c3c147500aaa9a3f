/**
 * The multi-process pace scenarios (see test/kafka/pace-scenario-cases.ts) where an event is appended by
 * another instance than the one it reached: a pace key that is not the message key (each delivery forwarded
 * to the owner of its pace key's partition), and `app.send` round robin over the instances (each send routed
 * to the owner of its key's partition). Instances join and are killed meanwhile; the same invariants are
 * checked after each (test/kafka/pace-checks.ts), and for sends, every receipt against the runs.
 */
import { describe, expect, it } from 'vitest';
import { scenarioClient } from './clients.js';
import { kafkaBrokers } from './fixture.js';
import { Scenario, scenarioAdmin } from './pace-scenario.js';
import { sendsRoundRobin } from './pace-scenario-cases.js';

describe.skipIf(!kafkaBrokers)(
  `pace on Kafka: events appended by another instance (on ${scenarioClient})`,
  { timeout: 150_000 },
  () => {
    const admin = scenarioAdmin();

    it('a pace key from the payload: instances join and one is killed while its events are forwarded', async () => {
      // Every event under a message key of its own: a key's events are spread over every partition. A slower
      // stream: each forwarded event is one request, which its owner appends (and commits) on its own.
      const stream = { messageKey: (k: number, seq: number) => `m${k}-${seq}`, pauseMs: 100 };
      const s = await Scenario.open(admin(), 'payload-key', { stream });
      await s.start('a');
      await s.start('b');
      await s.publishMore(120);
      await s.start('c');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.kill(s.instances[0]!);
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
      // Most events went through the requests topic to their pace key's owner.
      const forwarded = (await admin().fetchTopicOffsets(s.requests)).reduce((sum, p) => sum + Number(p.offset), 0);
      expect(forwarded).toBeGreaterThan(s.stream!.produced / 2);
    });

    it('app.send round robin while an instance joins and one is killed: sent again elsewhere, a duplicate of the same run', () =>
      sendsRoundRobin(admin()));
  },
);
