import type { GroupMember, PartitionAssigner } from 'kafkajs';
import { AssignerProtocol } from './kafkajs.js';

/** Per member id, its partitions of each topic (null-prototype records: a topic may be named `__proto__`). */
type Assignment = Map<string, Record<string, number[]>>;

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
    const { subscribers, assignment } = subscriptionsOf(members);
    // kafkajs hands the leader only its own topics: deal every member's, with their metadata loaded.
    const topics = [...subscribers.keys()].sort();
    await cluster.addMultipleTargetTopics(topics);
    for (const topic of topics) {
      const partitions = cluster
        .findTopicPartitionMetadata(topic)
        .map((m) => m.partitionId)
        .sort((a, b) => a - b);
      deal(topic, partitions, subscribers.get(topic) ?? [], assignment);
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

/**
 * Which members (in member-id order) read each topic, and an assignment in which every topic a member reads
 * is listed, with no partitions yet: kafkajs keeps one table of committed offsets per group, which each
 * generation's assignment resets to its own topics, and a fetch of the generation before that still runs
 * would find its topic gone and crash.
 */
function subscriptionsOf(members: GroupMember[]): { subscribers: Map<string, string[]>; assignment: Assignment } {
  const subscribers = new Map<string, string[]>();
  const assignment: Assignment = new Map(
    members.map((m) => [m.memberId, Object.create(null) as Record<string, number[]>]),
  );
  for (const { memberId, memberMetadata } of [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : 1))) {
    const decoded = AssignerProtocol.MemberMetadata.decode(memberMetadata);
    for (const topic of decoded?.topics ?? []) {
      subscribers.set(topic, [...(subscribers.get(topic) ?? []), memberId]);
      assignment.get(memberId)![topic] = [];
    }
  }
  return { subscribers, assignment };
}

/** Deals `partitions` of `topic` round-robin over `takers`. */
function deal(topic: string, partitions: number[], takers: string[], assignment: Assignment): void {
  if (takers.length === 0) return;
  partitions.forEach((partition, i) => {
    assignment.get(takers[i % takers.length]!)![topic]!.push(partition);
  });
}
