import type { Admin } from '@platformatic/kafka';
import { groupOffsets } from './offsets.js';

/** The client's fetch positions, `topic:partition` to the next offset to fetch (a messages stream's own map). */
type Fetching = Map<string, bigint>;

/**
 * Where a member resumes reading the partitions it lets go, should they come back to it. The client keeps its
 * own fetch position of a partition it lost, which is past what the app dropped at the revoke: read from there,
 * with nothing committed (or, under the classic protocol, for a partition kept through a rebalance), what was
 * dropped would never be read again.
 */
export class ResumePositions {
  /** `topic:partition` to the offset its reading resumes at: after what was finished, else where it began. */
  private readonly at = new Map<string, number>();

  /** Partitions of `topic` let go, each with where its reading resumes. */
  remember(topic: string, resumes: ReadonlyMap<number, number>): void {
    for (const [p, offset] of resumes) this.at.set(`${topic}:${p}`, offset);
  }

  /**
   * Partitions of `topic` came (back): the fetch position of each let go before is set to where its reading
   * resumes. A position the client then reads from the group's committed offset (a partition added) replaces it.
   */
  reseek(fetching: Fetching | undefined, topic: string, partitions: readonly number[]): void {
    for (const p of partitions) {
      const offset = this.take(`${topic}:${p}`);
      if (offset !== undefined) fetching?.set(`${topic}:${p}`, BigInt(offset));
    }
  }

  /**
   * After a classic rejoin, where each of `topic`'s `assigned` partitions is read from: the group's committed
   * offset; where the group has none, where this member's reading of it resumes or where the client stands,
   * else the start or the end (`fromBeginning`). The client refreshes none of its positions at an eager rejoin.
   */
  async afterRejoin(
    parts: { admin: Admin; group: string; partitions: number; fromBeginning: boolean },
    fetching: Fetching,
    topic: string,
    assigned: readonly number[],
  ): Promise<Map<string, bigint>> {
    const offsets = await groupOffsets(parts.admin, parts.group, topic, parts.partitions);
    const out = new Map<string, bigint>();
    for (const p of assigned) {
      const key = `${topic}:${p}`;
      const o = offsets.get(p);
      const resume = this.take(key);
      const current = fetching.get(key);
      const fallback = o === undefined ? undefined : parts.fromBeginning ? o.low : o.high;
      const offset =
        o !== undefined && o.committed >= 0
          ? o.committed
          : (resume ?? (current === undefined ? fallback : Number(current)));
      if (offset !== undefined) out.set(key, BigInt(offset));
    }
    return out;
  }

  private take(key: string): number | undefined {
    const offset = this.at.get(key);
    this.at.delete(key);
    return offset;
  }
}

/** What {@link placeUnread} works with. */
export interface Unplaced {
  readonly admin: Admin;
  readonly group: string;
  readonly topic: string;
  /** The topic's partition count, as known now. */
  readonly partitions: () => number;
  readonly fromBeginning: boolean;
  /** The client's fetch positions, while the stream they belong to is the member's. */
  readonly fetching: () => Fetching | undefined;
  /** Whether `partition` is still this member's. */
  readonly owned: (partition: number) => boolean;
  /** Waits before asking again after the `attempt`-th failure; false when it should not ask again. */
  readonly again: (attempt: number) => Promise<boolean>;
}

/**
 * Under the consumer protocol, partitions a heartbeat assigns get their fetch positions from the client's
 * offset refresh, which, when it fails (a partition just added whose leader the broker has not elected yet),
 * leaves them without one and the stream no longer fetching. This sets, for each of `partitions` still owned
 * and still without a position, the group's committed offset, else the start or the end (`fromBeginning`),
 * asking again while the broker cannot tell. Returns whether it set any (the stream must then be set fetching).
 */
export async function placeUnread(u: Unplaced, partitions: readonly number[]): Promise<boolean> {
  const unplaced = (): number[] =>
    partitions.filter((p) => u.owned(p) && u.fetching()?.has(`${u.topic}:${p}`) === false);
  let placed = false;
  for (let attempt = 1; unplaced().length > 0; attempt++) {
    try {
      const offsets = await groupOffsets(u.admin, u.group, u.topic, u.partitions());
      const fetching = u.fetching();
      for (const p of unplaced()) {
        const o = offsets.get(p);
        if (o === undefined) continue; // the broker's answer does not have it yet: asked again
        fetching?.set(`${u.topic}:${p}`, BigInt(o.committed >= 0 ? o.committed : u.fromBeginning ? o.low : o.high));
        placed = true;
      }
      if (unplaced().length === 0) break;
    } catch {
      // asked again below
    }
    if (!(await u.again(attempt))) break;
  }
  return placed;
}
