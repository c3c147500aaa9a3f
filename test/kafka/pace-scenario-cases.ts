/**
 * Pace across processes on the real broker: up to three instances of one app (one consumer group) as child
 * processes (test/fixtures/pace-instance.mjs), each with its own KafkaBroker and Kafka store (one prefix,
 * shards owned by partition) on a topic of 6 partitions, while the test publishes a stream of numbered
 * events over 60 keys. Instances join, leave, are killed, come back, and freeze past their session timeout;
 * then the stream stops, every instance drains, and the runs they printed are checked (test/kafka/pace-checks.ts):
 * every event in exactly one finished run (a run runs again only under its ID), no two instances running a
 * key at once, a frozen instance fenced and running nothing its partitions' new owner runs.
 *
 * The scenarios of one pace mode, for a test file of its own: the batch and debounce files run side by side.
 */
import { describe, expect, it } from 'vitest';
import { kafkaBrokers } from './fixture.js';
import { PARTITIONS, type Mode } from './pace-instances.js';
import { Scenario, scenarioAdmin } from './pace-scenario.js';

/** The scenarios, each with a paced subscriber of `mode`. */
export function processScenarios(mode: Extract<Mode, 'batch' | 'debounce'>): void {
  describe.skipIf(!kafkaBrokers)(`pace on Kafka: instances as processes (${mode})`, { timeout: 150_000 }, () => {
    const admin = scenarioAdmin();

    it('a second and a third instance join while events flow', async () => {
      const s = await Scenario.open(admin(), mode);
      await s.start('a');
      await s.publishMore(120);
      await s.start('b');
      await s.publishMore(120);
      await s.start('c');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance stopped gracefully (SIGTERM) leaves for good; the others take its windows', async () => {
      const s = await Scenario.open(admin(), mode);
      // Started at once, as a deployment starts them: each waits for the store's topics another is creating.
      const [, , c] = await Promise.all([s.start('a'), s.start('b'), s.start('c')]);
      await s.publishMore(150);
      c.child.kill('SIGTERM');
      expect(await c.exited).toEqual({ code: 0, signal: null });
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance killed (SIGKILL) for good: nothing it held is lost', async () => {
      const s = await Scenario.open(admin(), mode);
      const [, , c] = await Promise.all([s.start('a'), s.start('b'), s.start('c')]); // at once
      await s.publishMore(150);
      await s.kill(c);
      await s.shardsOwned(); // past its session timeout
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance killed (SIGKILL) comes back on the same store after the others took over', async () => {
      const s = await Scenario.open(admin(), mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      await s.kill(c);
      await s.shardsOwned();
      await s.publishMore(90);
      await s.start('c2');
      await s.shardsOwned();
      await s.publishMore(120);
      await s.drainAndCheck();
    });

    it('an instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice', async () => {
      const s = await Scenario.open(admin(), mode);
      const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
      await s.publishMore(150);
      // Frozen in the middle of a run (the window's new owner runs it again, under its ID), with others
      // perhaps waiting for its workers.
      const seen = c.lines.length;
      await s.until('c to start a run', () => c.lines.slice(seen).some((l) => l.ev === 'start'));
      const thaw = s.freeze(c);
      // Its partitions' new owners opened their shards: its producers are fenced.
      await s.until('the others to own every shard', () => {
        const owned = s.instances.filter((i) => i !== c).flatMap((i) => [...i.owned()]);
        return new Set(owned).size === PARTITIONS;
      });
      await s.publishMore(90);
      thaw();
      await s.publishMore(150);
      await s.drainAndCheck();
    });
  });
}
