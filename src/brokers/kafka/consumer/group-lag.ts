import type { Admin } from 'kafkajs';
import type { PartitionLag } from '../../../core/ports.js';

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

/**
 * Per partition of `topic` in `owned`: its end less `group`'s committed offset (less its start where the
 * group committed nothing).
 */
export async function partitionLags(
  admin: Admin,
  group: string,
  topic: string,
  owned: ReadonlySet<number>,
): Promise<PartitionLag[]> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId: group, topics: [topic] }),
  ]);
  const committedOf = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  const lags: PartitionLag[] = [];
  for (const end of ends) {
    if (!owned.has(end.partition)) continue;
    const c = committedOf.get(end.partition) ?? -1;
    lags.push({ partition: end.partition, lag: Math.max(0, Number(end.high) - (c >= 0 ? c : Number(end.low))) });
  }
  return lags.sort((a, b) => a.partition - b.partition);
}
