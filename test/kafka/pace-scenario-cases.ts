/**
 * Pace across processes on the real broker: up to three instances of one app (one consumer group) as child
 * processes (test/fixtures/pace-instance.mjs), each with its own broker and Kafka store (one prefix, shards
 * owned by partition; on the Node line's client, `scenarioClient`) on a topic of 6 partitions, while the test publishes a stream of numbered
 * events over 60 keys. Instances join, leave, are killed, come back, and freeze past their session timeout;
 * then the stream stops, every instance drains, and the runs they printed are checked (test/kafka/pace-checks.ts):
 * every event in exactly one finished run (a run runs again only under its ID), no two instances running a
 * key at once, a frozen instance fenced and running nothing its partitions' new owner runs.
 *
 * The scenarios of one pace mode, for a test file of its own: the batch and debounce files run side by side.
 */
import type { Admin } from 'kafkajs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { scenarioClient, type TestClient } from './clients.js';
import { checkReceipts } from './pace-checks.js';
import { kafkaBrokers } from './fixture.js';
import { PARTITIONS, type Mode } from './pace-instances.js';
import { Scenario, scenarioAdmin } from './pace-scenario.js';
import { Sender } from './pace-sender.js';

/** The scenarios, each with a paced subscriber of `mode`. */
export function processScenarios(mode: Extract<Mode, 'batch' | 'debounce'>): void {
  const title = `pace on Kafka: instances as processes (${mode}, on ${scenarioClient})`;
  describe.skipIf(!kafkaBrokers)(title, { timeout: 150_000 }, () => {
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
      await killedComesBack(admin(), mode);
    });

    it('an instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice', async () => {
      await frozenIsFenced(admin(), mode);
    });
  });
}

/** An instance killed (SIGKILL) comes back on the same store after the others took over. */
export async function killedComesBack(admin: Admin, mode: Mode, client?: TestClient['arg']): Promise<void> {
  const s = await Scenario.open(admin, mode, { client });
  const [, , c] = [await s.start('a'), await s.start('b'), await s.start('c')];
  await s.publishMore(150);
  await s.kill(c);
  await s.shardsOwned();
  await s.publishMore(90);
  await s.start('c2');
  await s.shardsOwned();
  await s.publishMore(120);
  await s.drainAndCheck();
}

/** An instance frozen (SIGSTOP) past its session timeout is fenced, and thawed runs nothing twice. */
export async function frozenIsFenced(admin: Admin, mode: Mode, client?: TestClient['arg']): Promise<void> {
  const s = await Scenario.open(admin, mode, { client });
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
  const frozenLines = c.lines.length;
  thaw();
  // It learns that the group removed it, lets go of what it held, and joins again as a member.
  await s.until('c, thawed, to own a shard again', () => c.lines.slice(frozenLines).some((l) => l.ev === 'own'));
  await s.publishMore(150);
  await s.drainAndCheck();
}

/** The keys sends go to: few, so that windows gather several sends. */
const SEND_KEYS = 12;

/**
 * `app.send` round robin over the instances while one joins and one is killed: each send routed to the owner of
 * its key's partition, one sent again elsewhere a duplicate of the same run, every receipt checked against the runs.
 */
export async function sendsRoundRobin(admin: Admin, client?: TestClient['arg']): Promise<void> {
  const s = await Scenario.open(admin, 'batch', { stream: false, client });
  await s.start('a');
  const b = await s.start('b');
  const sender = new Sender(() => s.live(), SEND_KEYS, 6);
  onTestFinished(() => sender.abandon());
  const answered = (n: number) => {
    const target = sender.answered + n;
    return s.until(`${n} more sends answered`, () => sender.answered >= target);
  };
  await answered(150);
  await s.start('c');
  await answered(150);
  await s.kill(b);
  await answered(150);
  await sender.stop();
  const runs = await s.drainAndCheck(sender.next);
  checkReceipts([...sender.sent.values()], runs);
  expect(sender.notDuplicates, 'sent again to another instance: a duplicate of the same run').toEqual([]);
  expect(sender.again).toBeGreaterThan(30);
  // Windows gathered several sends, each of them answered with the window's run ID.
  expect([...runs.values()].some((r) => r.seqs.length > 2)).toBe(true);
  expect([...sender.refusals.keys()].filter((code) => code !== 'SEND_TIMEOUT')).toEqual([]);
}
