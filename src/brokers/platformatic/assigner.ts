import type { GroupPartitionsAssigner, GroupPartitionsAssignments } from '@platformatic/kafka';

/**
 * The classic protocol's assignment, made by the group's leader: each topic's partitions shared round-robin
 * among the members subscribed to it only. One app's subscribers share a group (the app's name) and each
 * reads its own topic: the client's own round-robin would give a member partitions of topics it does not read.
 */
export const subscriptionAssigner: GroupPartitionsAssigner = (_current, members, _leaderTopics, metadata) => {
  const out = new Map<string, GroupPartitionsAssignments>();
  for (const id of members.keys()) out.set(id, { memberId: id, assignments: new Map() });
  // The client hands the leader's own topics; the members' subscriptions name them all.
  const topics = new Set([...members.values()].flatMap((m) => m.topics ?? []));
  for (const topic of [...topics].sort()) {
    const readers = [...members.values()]
      .filter((m) => m.topics?.includes(topic) === true)
      .map((m) => m.memberId)
      .sort();
    const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
    if (readers.length === 0) continue;
    for (let partition = 0; partition < count; partition++) {
      const member = out.get(readers[partition % readers.length]!)!;
      let assignment = member.assignments.get(topic);
      if (assignment === undefined) member.assignments.set(topic, (assignment = { topic, partitions: [] }));
      assignment.partitions.push(partition);
    }
  }
  return [...out.values()];
};
