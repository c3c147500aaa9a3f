import type { Admin } from '@platformatic/kafka';

/** Per partition of `topic`: its start and end (the last stable offset: what a read_committed reader reaches). */
export async function partitionEnds(
  admin: Admin,
  topic: string,
  partitions: number,
): Promise<Map<number, { low: number; high: number }>> {
  const ask = (timestamp: bigint) =>
    admin.listOffsets({
      topics: [
        { name: topic, partitions: Array.from({ length: partitions }, (_, p) => ({ partitionIndex: p, timestamp })) },
      ],
      isolationLevel: 1,
    });
  const [lows, highs] = await Promise.all([ask(-2n), ask(-1n)]);
  const out = new Map<number, { low: number; high: number }>();
  for (const p of highs[0]?.partitions ?? []) out.set(p.partitionIndex, { low: 0, high: Number(p.offset) });
  for (const p of lows[0]?.partitions ?? []) {
    const e = out.get(p.partitionIndex);
    if (e) e.low = Number(p.offset);
  }
  return out;
}

/** Per partition of `topic`: `group`'s committed offset, −1 where it committed nothing. */
export async function committedOffsets(admin: Admin, group: string, topic: string): Promise<Map<number, number>> {
  const [answer] = await admin.listConsumerGroupOffsets({ groups: [group] });
  const out = new Map<number, number>();
  for (const t of answer?.topics ?? [])
    if (t.name === topic) for (const p of t.partitions) out.set(p.partitionIndex, Number(p.committedOffset));
  return out;
}

/** One partition as the broker tells it: its start, its end (last stable offset), and the group's committed offset. */
export interface PartitionOffsets {
  readonly low: number;
  readonly high: number;
  /** The group's committed offset; −1 where it committed nothing. */
  readonly committed: number;
}

/** Per partition of `topic`: its start, its end and `group`'s committed offset, asked at once. */
export async function groupOffsets(
  admin: Admin,
  group: string,
  topic: string,
  partitions: number,
): Promise<Map<number, PartitionOffsets>> {
  const [ends, committed] = await Promise.all([
    partitionEnds(admin, topic, partitions),
    committedOffsets(admin, group, topic),
  ]);
  const out = new Map<number, PartitionOffsets>();
  for (const [p, e] of ends) out.set(p, { ...e, committed: committed.get(p) ?? -1 });
  return out;
}

/**
 * Messages of the partitions in `positions` past where the member reads them: its position where it has one,
 * else the group's committed offset, else the partition's start.
 */
export function lagPast(
  offsets: ReadonlyMap<number, PartitionOffsets>,
  positions: ReadonlyMap<number, number | undefined>,
): number {
  let lag = 0;
  for (const [p, position] of positions) {
    const o = offsets.get(p);
    if (o !== undefined) lag += Math.max(0, o.high - (position ?? (o.committed >= 0 ? o.committed : o.low)));
  }
  return lag;
}

/**
 * `ConsumeRequest.fromEnd`: the partitions of `topic` (`partitions` of them) that `group` committed nothing of
 * are committed at their end, before the member joins.
 */
export async function commitEnds(admin: Admin, group: string, topic: string, partitions: number): Promise<void> {
  const [ends, committed] = await Promise.all([
    partitionEnds(admin, topic, partitions),
    committedOffsets(admin, group, topic),
  ]);
  const partitionOffsets = [...ends]
    .filter(([p]) => (committed.get(p) ?? -1) < 0)
    .map(([partition, e]) => ({ partition, offset: BigInt(e.high) }));
  if (partitionOffsets.length > 0)
    await admin.alterConsumerGroupOffsets({ groupId: group, topics: [{ name: topic, partitionOffsets }] });
}
