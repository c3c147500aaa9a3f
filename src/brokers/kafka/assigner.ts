import type { PartitionAssigner } from 'kafkajs';
import { AssignerProtocol } from './kafkajs.js';

/**
 * A round-robin assigner that respects each member's own subscription. kafkajs's built-in round-robin
 * deals every subscribed topic's partitions to every member, so two subscribers of one app (one group,
 * different topics) would get each other's partitions. Here each topic's partitions go round-robin over
 * the members subscribed to that topic only, in member-id order.
 */
export const subscriptionAwareAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'SluiceRoundRobin',
  version: 0,

  async assign({ members }) {
    const subscribers = new Map<string, string[]>();
    // Null-prototype records: a topic may be named `constructor` or `__proto__` (Kafka allows both).
    const assignment = new Map<string, Record<string, number[]>>(
      members.map((m) => [m.memberId, Object.create(null) as Record<string, number[]>]),
    );
    for (const { memberId, memberMetadata } of [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : 1))) {
      const decoded = AssignerProtocol.MemberMetadata.decode(memberMetadata);
      for (const topic of decoded?.topics ?? []) {
        subscribers.set(topic, [...(subscribers.get(topic) ?? []), memberId]);
        // Every topic a member reads is in its assignment, with no partitions if none fall to it: kafkajs keeps
        // one table of committed offsets per group, which each generation's assignment resets to its own
        // topics, and a fetch of the generation before that still runs would find its topic gone and crash.
        assignment.get(memberId)![topic] = [];
      }
    }
    // kafkajs hands the leader only its own topics: deal every member's, with their metadata loaded.
    const topics = [...subscribers.keys()].sort();
    await cluster.addMultipleTargetTopics(topics);
    for (const topic of topics) {
      const takers = subscribers.get(topic) ?? [];
      if (takers.length === 0) continue;
      const partitions = cluster
        .findTopicPartitionMetadata(topic)
        .map((m) => m.partitionId)
        .sort((a, b) => a - b);
      partitions.forEach((partition, i) => {
        const mine = assignment.get(takers[i % takers.length]!)!;
        mine[topic]!.push(partition);
      });
    }
    return [...assignment].map(([memberId, topicsOf]) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({
        version: 0,
        assignment: topicsOf,
        userData: Buffer.alloc(0),
      }),
    }));
  },

  protocol({ topics }) {
    return {
      name: 'SluiceRoundRobin',
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }),
    };
  },
});
