/**
 * Against the real broker: Sluice's assigner is sticky. When a member leaves, the others keep every
 * partition they had, and only the leaver's partitions move.
 */
import { AssignerProtocol, Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { App, silentLogger, subscriber } from '../../src/index.js';
import { uniqueTopic } from '../contract/broker-contract.js';
import { closeAll, eachConsumer, kafkaBrokers, testKafka } from './fixture.js';

describe.skipIf(!kafkaBrokers)('kafka: sticky assignment', () => {
  const apps: App[] = [];
  afterEach(async () => void (await Promise.all(apps.splice(0).map((a) => a.stop()))));
  afterAll(closeAll);

  /** An app in `group` reading `topic`, and its member id in the group as its consumer last joined. */
  function member(group: string, topic: string) {
    const broker = testKafka();
    const joined = { memberId: '', partitions: [] as number[] };
    eachConsumer(broker, (consumer) => {
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        joined.memberId = e.payload.memberId;
        joined.partitions = [...(e.payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b);
      });
    });
    const app = new App({ name: group, logger: silentLogger, shutdownTimeoutMs: 5_000 }).withBroker(broker, (b) =>
      b.include(subscriber(topic, () => {}).build()),
    );
    apps.push(app);
    return { app, joined };
  }

  /** The group's members and their partitions of `topic`, as the coordinator holds them once stable. */
  async function stableAssignment(a: Admin, group: string, topic: string): Promise<Map<string, number[]> | undefined> {
    const [described] = (await a.describeGroups([group])).groups;
    if (described?.state !== 'Stable') return undefined;
    return new Map(
      described.members.map((m) => [
        m.memberId,
        [...(AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[topic] ?? [])].sort(
          (x, y) => x - y,
        ),
      ]),
    );
  }

  /**
   * Asks the coordinator until the group is stable with exactly `members`, each of which has also heard of
   * its assignment there (its last join says the same): a state only the broker knows, for no set time.
   */
  async function settledWith(
    a: Admin,
    group: string,
    topic: string,
    members: { joined: { memberId: string; partitions: number[] } }[],
  ): Promise<Map<string, number[]>> {
    for (;;) {
      const held = await stableAssignment(a, group, topic);
      const agreed =
        held !== undefined &&
        held.size === members.length &&
        members.every(({ joined }) => JSON.stringify(held.get(joined.memberId)) === JSON.stringify(joined.partitions));
      if (agreed) return held;
      await new Promise<void>((resolve) => setTimeout(resolve, 20));
    }
  }

  it('3 members on 6 partitions, then one leaves: the two others keep every partition they had, and only the leaver’s move', async () => {
    const topic = uniqueTopic('sticky');
    const group = `g-${topic}`;
    await testKafka().createTopic(topic, 6);
    const [a, b, c] = [member(group, topic), member(group, topic), member(group, topic)];
    const admin = new Kafka({ clientId: 'plain', brokers: [kafkaBrokers!], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      for (const m of [a, b, c]) await m.app.start();
      const three = await settledWith(admin, group, topic, [a, b, c]);
      expect([...three.values()].map((ps) => ps.length)).toEqual([2, 2, 2]);
      expect([...three.values()].flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
      // The leaver is the first in member-id order: a deal that ignored what members own (round-robin, or a
      // range in member-id order) would then move partitions between the two others too.
      const [leaver, ...stay] = [a, b, c].sort((x, y) => (x.joined.memberId < y.joined.memberId ? -1 : 1));
      const before = new Map([leaver!, ...stay].map((m) => [m, m.joined.partitions]));

      await leaver!.app.stop();
      const two = await settledWith(admin, group, topic, stay);
      expect([...two.values()].flat().sort()).toEqual([0, 1, 2, 3, 4, 5]);
      for (const m of stay) {
        expect(m.joined.partitions).toHaveLength(3);
        expect(m.joined.partitions).toEqual(expect.arrayContaining(before.get(m)!)); // kept all it had
      }
      // What they gained was the leaver's, and nothing else moved.
      const gained = stay.flatMap((m) => m.joined.partitions.filter((p) => !before.get(m)!.includes(p)));
      expect(gained.sort()).toEqual(before.get(leaver!));
    } finally {
      await admin.disconnect();
    }
  });
});
