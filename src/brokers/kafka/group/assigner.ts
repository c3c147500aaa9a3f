import type { GroupMember, PartitionAssigner } from 'kafkajs';
import { decodeClaim, encodeClaim, type MemberClaim } from './claims.js';
import { AssignerProtocol } from '../kafkajs.js';
import { stickyAssign, type StickyMember } from './sticky-assign.js';

/**
 * The protocol's name. It is still the name of the first, round-robin version of this assigner, so that
 * members of either version agree on it in one group (a member of the first version sends no claim, and
 * is dealt partitions as a new member is; as leader, it deals round-robin).
 */
export const PROTOCOL_NAME = 'SluiceRoundRobin';

/**
 * A sticky assigner that respects each member's own subscription, for the member whose assignment `claim`
 * tracks (a kafkajs assigner is made per consumer, so each gets its own). kafkajs's built-in round-robin
 * deals every subscribed topic's partitions to every member, so two subscribers of one app (one group,
 * different topics) would get each other's partitions; here each topic's partitions go only to the members
 * that read it. Each member sends the partitions it was assigned last, and the leader leaves them where they
 * are as far as balance allows (see {@link stickyAssign}): a rebalance moves as few partitions as it can.
 */
export function stickyAssigner(claim: MemberClaim): PartitionAssigner {
  return ({ cluster }) => ({
    name: PROTOCOL_NAME,
    version: 1,

    async assign({ members }) {
      const readers = members.map(memberOf);
      // kafkajs hands the leader only its own topics: deal every member's, with their metadata loaded.
      const topics = [...new Set(readers.flatMap((m) => m.topics))].sort();
      await cluster.addMultipleTargetTopics(topics);
      const partitions = new Map(
        topics.map((topic) => [topic, cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId)]),
      );
      return [...stickyAssign(readers, partitions)].map(([memberId, topicsOf]) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: assignmentOf(topicsOf),
          userData: Buffer.alloc(0),
        }),
      }));
    },

    protocol({ topics }) {
      return {
        name: PROTOCOL_NAME,
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: encodeClaim(claim.claim()) }),
      };
    },
  });
}

/** What a member's metadata says: the topics it reads and its claim (none, if it sent none or a broken one). */
function memberOf({ memberId, memberMetadata }: GroupMember): StickyMember {
  const decoded = AssignerProtocol.MemberMetadata.decode(memberMetadata);
  return { id: memberId, topics: decoded?.topics ?? [], ...decodeClaim(decoded?.userData) };
}

/**
 * One member's assignment as kafkajs encodes it: every topic it reads listed, with no partitions too.
 * kafkajs keeps one table of committed offsets per group, which each generation's assignment resets to its
 * own topics, and a fetch of the generation before that still runs would find its topic gone and crash.
 * A null-prototype record: a topic may be named `__proto__`.
 */
function assignmentOf(topics: Map<string, number[]>): Record<string, number[]> {
  const record = Object.create(null) as Record<string, number[]>;
  for (const [topic, partitions] of topics) record[topic] = partitions;
  return record;
}
