/**
 * The heart of Sluice's group assignment, with no kafkajs in it: who gets which partition, given what each
 * member reads and what it owned before. Each topic is dealt on its own, over the members that read it;
 * topics that exactly the same members read, with the same partitions, are co-partitioned: dealt once,
 * partition p of each going to the same member.
 */

/** One member of a group as the leader sees it: what it reads, and what it claims to own. */
export interface StickyMember {
  /** The member id the coordinator gave it. */
  readonly id: string;
  /** The topics it reads. */
  readonly topics: readonly string[];
  /** The partitions of each topic it was assigned last (empty: it owns nothing, or could not tell). */
  readonly owned: ReadonlyMap<string, readonly number[]>;
  /** The group generation it was assigned them in: of two claims to one partition, the newer wins. */
  readonly generation: number;
}

/** Per member id, its partitions (ascending) of every topic it reads, with no partitions too. */
export type StickyAssignment = Map<string, Map<string, number[]>>;

/**
 * Deals the partitions of each topic over the members that read it, moving as few as it can.
 *
 * - Every partition of `partitionsByTopic` goes to exactly one member that reads its topic (none, if no
 *   member does); a topic a member reads is listed in its assignment even with no partitions.
 * - Balanced per topic: the counts of the members that read it differ by at most one.
 * - Sticky: a member keeps the partitions it claims as long as the topic still has them, it still reads
 *   the topic, and no other member claims the same partition with a newer generation (two claims of the
 *   same generation, which only a broken member can make, both lose). Of those it keeps up to its fair
 *   share; the shares one above the floor go first to the members that keep the most. What is left over
 *   (new partitions, the partitions of members gone, the excess of members over their share) is dealt to
 *   the members under their share, in member-id order.
 *
 * - Co-partitioned: topics read by exactly the same set of members and with the same partitions are dealt
 *   as one (the first by name, over every claim to any of them: a member keeps partition p of them all if it
 *   may keep p of one), and each gets the same assignment; so partition p of a paced subscriber's topic and
 *   partition p of its requests topic always have one owner.
 *
 * The result depends only on the input, never on its order: members are taken in member-id order.
 */
export function stickyAssign(
  members: readonly StickyMember[],
  partitionsByTopic: ReadonlyMap<string, readonly number[]>,
): StickyAssignment {
  const sorted = [...members].sort((a, b) => byId(a.id, b.id));
  const assignment: StickyAssignment = new Map(sorted.map((m) => [m.id, new Map<string, number[]>()]));
  const readers = new Map<string, StickyMember[]>();
  for (const m of sorted)
    for (const topic of new Set(m.topics)) {
      readers.set(topic, [...(readers.get(topic) ?? []), m]);
      assignment.get(m.id)!.set(topic, []);
    }
  for (const topics of coPartitioned(readers, partitionsByTopic)) {
    const takers = readers.get(topics[0]!)!;
    const partitions = partitionsOf(partitionsByTopic, topics[0]!);
    const joined = takers.map((m) => ({
      ...m,
      owned: new Map([[topics[0]!, topics.flatMap((t) => m.owned.get(t) ?? [])]]),
    }));
    const dealt = balance(
      partitions,
      takers.map((m) => m.id),
      validClaims(topics[0]!, joined, new Set(partitions)),
    );
    for (const [id, mine] of dealt) for (const topic of topics) assignment.get(id)!.set(topic, [...mine]);
  }
  return assignment;
}

/** The partitions of `topic`, once each, ascending. */
const partitionsOf = (byTopic: ReadonlyMap<string, readonly number[]>, topic: string): number[] =>
  [...new Set(byTopic.get(topic) ?? [])].sort((a, b) => a - b);

/**
 * The topics read, grouped: those read by exactly the same members (in member-id order) and with the same
 * partitions go together. Each group is sorted by name, the groups by their first name.
 */
function coPartitioned(
  readers: ReadonlyMap<string, readonly StickyMember[]>,
  byTopic: ReadonlyMap<string, readonly number[]>,
): string[][] {
  const groups = new Map<string, string[]>();
  for (const topic of [...readers.keys()].sort(byId)) {
    const ids = readers.get(topic)!.map((m) => m.id);
    const signature = JSON.stringify([ids, partitionsOf(byTopic, topic)]);
    groups.set(signature, [...(groups.get(signature) ?? []), topic]);
  }
  return [...groups.values()];
}

/**
 * The partitions of `topic` each of `takers` may keep (ascending): those the topic has, of which it is the
 * only claimant of the newest generation claimed.
 */
function validClaims(topic: string, takers: readonly StickyMember[], exists: Set<number>): Map<string, number[]> {
  const newest = new Map<number, { generation: number; ids: string[] }>();
  for (const m of takers)
    for (const p of new Set(m.owned.get(topic) ?? [])) {
      if (!exists.has(p)) continue;
      const best = newest.get(p);
      if (best === undefined || m.generation > best.generation)
        newest.set(p, { generation: m.generation, ids: [m.id] });
      else if (m.generation === best.generation) best.ids.push(m.id);
    }
  const kept = new Map<string, number[]>(takers.map((m) => [m.id, []]));
  for (const [p, { ids }] of newest) if (ids.length === 1) kept.get(ids[0]!)!.push(p);
  for (const mine of kept.values()) mine.sort((a, b) => a - b);
  return kept;
}

/**
 * Deals `partitions` over `ids` (member-id order), balanced, each keeping what it may of `kept` (the lowest
 * first, when it keeps more than its share).
 */
function balance(partitions: readonly number[], ids: readonly string[], kept: Map<string, number[]>) {
  const base = Math.floor(partitions.length / ids.length);
  const extra = partitions.length % ids.length;
  const keeps = (id: string): number => kept.get(id)!.length;
  // The `extra` shares of base + 1 go to the members that keep the most: that is what keeps the most.
  const byKept = [...ids].sort((a, b) => keeps(b) - keeps(a) || byId(a, b));
  const share = new Map(byKept.map((id, i) => [id, base + (i < extra ? 1 : 0)]));
  const dealt = new Map<string, number[]>();
  const taken = new Set<number>();
  for (const id of ids) {
    const mine = kept.get(id)!.slice(0, share.get(id));
    for (const p of mine) taken.add(p);
    dealt.set(id, mine);
  }
  const rest = partitions.filter((p) => !taken.has(p));
  let next = 0;
  for (const id of ids) {
    const mine = dealt.get(id)!;
    while (mine.length < share.get(id)!) mine.push(rest[next++]!);
    mine.sort((a, b) => a - b);
  }
  return dealt;
}

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
