import type { Admin } from 'kafkajs';

/**
 * Messages of `topic`'s partitions in `owned` that the member has yet to take: past `position` (where it
 * reads the partition now), else past `group`'s committed offset, else past the partition's start.
 */
export async function groupLag(
  admin: Admin,
  group: string,
  topic: string,
  owned: ReadonlySet<number>,
  position: (partition: number) => number | undefined,
): Promise<number> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const committedOf = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  let lag = 0;
  for (const end of ends) {
    if (!owned.has(end.partition)) continue;
    const c = committedOf.get(end.partition) ?? -1;
    lag += Math.max(0, Number(end.high) - (position(end.partition) ?? (c >= 0 ? c : Number(end.low))));
  }
  return lag;
}
