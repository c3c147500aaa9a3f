/**
 * The multi-process pace scenarios (see test/kafka/pace-scenario-cases.ts) of a rate: `drop` and
 * `perMinute` held across instances as shards move between them. The rate's history is the shard's state:
 * the instance that takes a shard must go on counting the runs its last owner started. With no ManualClock
 * across processes, each workload is chosen so that the system clock cannot break what is asserted: `drop`
 * counts over an hour (the scenario takes less), so a key's first three events run and every later one is
 * dropped; `perMinute` counts the runs that started in the minute after the first event was published,
 * which can be no more than its limit however slow the machine.
 */
import { describe, expect, it } from 'vitest';
import { scenarioClient } from './clients.js';
import { kafkaBrokers } from './fixture.js';
import { DROP_MAX, PER_MINUTE } from './pace-instances.js';
import { Scenario, scenarioAdmin } from './pace-scenario.js';

describe.skipIf(!kafkaBrokers)(
  `pace on Kafka: rates across instances (on ${scenarioClient})`,
  { timeout: 150_000 },
  () => {
    const admin = scenarioAdmin();

    it('drop: a key’s runs stay within the rate while an instance is killed and another joins', async () => {
      const s = await Scenario.open(admin(), 'drop');
      await s.start('a');
      const b = await s.start('b');
      await s.publishMore(120);
      await s.kill(b);
      await s.shardsOwned();
      await s.publishMore(120);
      await s.start('c');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck(); // every key's first DROP_MAX events ran, each a run; no later one did
      expect(s.stream!.next.filter((n) => n > DROP_MAX).length, 'keys with events dropped').toBeGreaterThan(30);
    });

    it('perMinute: no key starts more runs in a minute than its limit while an instance joins; the rest run later', async () => {
      // 4 events a key: the first PER_MINUTE run at once, the others a minute later. The stream is held while
      // instances start, so that each key gets events both before and after its shard moves.
      const s = await Scenario.open(admin(), 'per-minute', { stream: { perKey: 2 * PER_MINUTE } });
      const stream = s.stream!;
      stream.hold();
      await s.start('a');
      await s.start('b');
      stream.resume();
      await s.publishMore(90);
      stream.hold();
      await s.start('c');
      await s.shardsOwned();
      stream.resume();
      await s.until('4 events of every key', () => stream.next.every((n) => n === 2 * PER_MINUTE));
      await stream.stop();
      const counts = [...stream.next];
      await s.runsEnded(counts, (n) => Array.from({ length: Math.min(n, PER_MINUTE) }, (_, seq) => seq));
      await s.stopAll();
      // Rather than wait out the minute: one instance whose clock is two minutes ahead takes every shard and
      // runs what waits (its clock is what the rate reads there).
      const later = await s.start('later', 120_000);
      await s.drainAndCheck(counts);
      const held = later.lines.filter((l) => l.ev === 'start' && l.attempt === 1).length;
      expect(held, 'runs held back for a minute').toBeGreaterThan(20);
    });
  },
);
