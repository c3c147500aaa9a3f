import type { InboundMessage } from '../../../core/message.js';
import type { Clock } from '../../../core/ports.js';
import type { OffsetCommits } from './offset-commits.js';
import { PartitionFeed } from './partition-feed.js';

/**
 * The partitions a group member owns and their feeds: what `take()` hands out, what is committed, and the
 * revokes. A revoked feed stays until the app has settled its work and the commits were sent, so that a
 * partition given back to the member meanwhile is read again only after that.
 */
export class OwnedPartitions {
  /** The partitions of the member's current assignment. */
  assignment = new Set<number>();
  /**
   * The partitions of the assignment not revoked since it arrived. The app took each of them (`onAssign`)
   * whether or not a batch of it was fetched since, and a partition with no feed (nothing was fetched of it:
   * a quiet partition) must be revoked all the same, or the app would keep what goes with it (a shard).
   */
  private unrevoked = new Set<number>();
  /** The revoke under way, if any: a later one runs after it. */
  revoking: Promise<void> | undefined;
  private readonly feeds = new Map<number, PartitionFeed>();
  /** The feeds as an array, for take(); rebuilt when the map changes. */
  private feedList: PartitionFeed[] = [];
  private cursor = 0;

  constructor(
    private readonly topic: string,
    private readonly commits: OffsetCommits,
    /** The app settles the work of partitions taken away (see `ConsumeRequest.onRevoke`). */
    private readonly onRevoke: (partitions: readonly number[]) => Promise<void>,
    /** The clock of the feeds' waits. */
    private readonly clock: Clock,
  ) {}

  /** The feed of `partition`, if it has one. */
  feed(partition: number): PartitionFeed | undefined {
    return this.feeds.get(partition);
  }

  /** A new feed for `partition`, which skips what this member finished before (see {@link OffsetCommits}). */
  open(partition: number): PartitionFeed {
    const feed = new PartitionFeed(this.topic, partition, this.clock);
    this.feeds.set(partition, feed);
    this.feedList = [...this.feeds.values()];
    feed.skipBelow = this.commits.takeFinished(partition);
    return feed;
  }

  /** The feeds whose commits may be sent now: owned, and not lost. */
  due(): PartitionFeed[] {
    return [...this.feeds.values()].filter((f) => !f.lost && this.assignment.has(f.partition));
  }

  /** Every feed, revoked or not. */
  all(): IterableIterator<PartitionFeed> {
    return this.feeds.values();
  }

  /**
   * Up to `max` messages, and of partition p at most `perPartition(p)`, one partition's batch drained before
   * the next (see `KafkaConsumer.take`). The array is made at its size: a single worker takes one message at
   * a time, and an empty array that one push grows gets room for 17 (V8), an allocation per message over
   * twice the size of the message's own wrapper.
   */
  take(max: number, perPartition?: (partition: number) => number): readonly InboundMessage[] {
    const feeds = this.feedList;
    const n = feeds.length;
    const out = new Array<InboundMessage>(Math.max(0, Math.min(max, this.takeable(perPartition))));
    let taken = 0;
    for (let k = 0; k < n && taken < out.length; k++) {
      const feed = feeds[(this.cursor + k) % n]!;
      const room = this.roomOf(feed, perPartition);
      if (room <= 0) continue;
      taken = feed.takeInto(out, taken, Math.min(out.length, taken + room));
      if (taken === max) {
        this.cursor = (this.cursor + k) % n;
        return out;
      }
    }
    this.cursor = n > 0 ? (this.cursor + 1) % n : 0;
    return out;
  }

  /** Messages that `take` may hand out now, over the feeds that hand out (neither paused nor revoked). */
  private takeable(perPartition: ((partition: number) => number) | undefined): number {
    let waiting = 0;
    for (const f of this.feedList) waiting += Math.min(f.buffered(), this.roomOf(f, perPartition));
    return waiting;
  }

  /** How many messages of `feed` may be taken now: none while paused or revoked. */
  private roomOf(feed: PartitionFeed, perPartition: ((partition: number) => number) | undefined): number {
    if (feed.paused || feed.revoked) return 0;
    return perPartition === undefined ? Number.POSITIVE_INFINITY : Math.max(0, perPartition(feed.partition));
  }

  /** Messages fetched and not taken, over the feeds not revoked. */
  backlog(): number {
    let waiting = 0;
    for (const f of this.feeds.values()) if (!f.revoked) waiting += f.buffered();
    return waiting;
  }

  /**
   * Of a partition owned and read (or being revoked): committable. Otherwise (a partition taken away before
   * the app's revoke reported it) it is only remembered: everything below was finished here.
   */
  commit(partition: number, offset: number): void {
    const f = this.feeds.get(partition);
    const read = f !== undefined && this.assignment.has(partition) && f.readFrom !== undefined && offset >= f.readFrom;
    if (f !== undefined && (f.revoked || read)) f.markCommittable(offset);
    else this.commits.remember(partition, offset);
  }

  /**
   * A new assignment. Partitions still held here were revoked without a heartbeat telling us first: the app
   * drops them (their uncommitted work is delivered again to whoever owns them now, unless they come back
   * here). Their feeds stay (revoked, and not committed: another member may have moved on) until the app has
   * reported what it finished, which is remembered; a partition back here is read again only after that.
   * Returns the partitions found stale, and their revoke.
   */
  assign(partitions: readonly number[]): { stale: number[]; revoked: Promise<void> | undefined } {
    const stale = [...this.feeds.values()].filter((f) => !f.revoked);
    for (const f of stale) f.lost = true;
    const quiet = this.quiet();
    this.assignment = new Set(partitions);
    this.unrevoked = new Set(partitions);
    const revoked = stale.length > 0 || quiet.length > 0 ? this.revokeFeeds(stale, quiet) : undefined;
    return { stale: [...stale.map((f) => f.partition), ...quiet], revoked };
  }

  /**
   * A rebalance is coming (eager: every partition goes): stop handing out, let the app settle its
   * in-flight work and commit, send the commits while still a member of this generation, let go.
   */
  revokeAll(): Promise<void> {
    const revoked = [...this.feeds.values()].filter((f) => !f.revoked);
    const quiet = this.quiet();
    this.unrevoked.clear();
    if (revoked.length === 0 && quiet.length === 0) return this.revoking ?? Promise.resolve();
    return this.revokeFeeds(revoked, quiet);
  }

  /** The partitions of the assignment not revoked yet that have no feed handing out (nothing was fetched). */
  private quiet(): number[] {
    return [...this.unrevoked].filter((p) => this.feeds.get(p)?.revoked !== false);
  }

  /** Wakes every feed's waiter: the consumer is closing. */
  wakeAll(): void {
    for (const f of this.feeds.values()) f.wake();
  }

  /** Forgets every feed and the assignment (the consumer has closed). */
  clear(): void {
    this.feeds.clear();
    this.feedList = [];
    this.assignment.clear();
    this.unrevoked.clear();
  }

  /**
   * Stops handing out `revoked`, lets the app settle their work and that of the `quiet` partitions (after
   * any revoke under way), sends the commits, lets them go. A feed leaves only then, so that a partition
   * given back meanwhile waits for it.
   */
  private revokeFeeds(revoked: PartitionFeed[], quiet: readonly number[]): Promise<void> {
    for (const f of revoked) {
      f.revoked = true;
      f.clear();
      f.wake();
    }
    const previous = (this.revoking ?? Promise.resolve()).catch(() => {});
    const revoking = previous.then(() => this.settle(revoked, quiet));
    // Cleared once it settles (not inside it: a revoke that finished at once would clear before being set).
    const clear = (): void => {
      if (this.revoking === revoking) this.revoking = undefined;
    };
    revoking.then(clear, clear);
    this.revoking = revoking;
    return revoking;
  }

  private async settle(revoked: PartitionFeed[], quiet: readonly number[]): Promise<void> {
    try {
      await this.onRevoke([...revoked.map((f) => f.partition), ...quiet]);
      await this.commits.flush();
    } finally {
      for (const f of revoked) this.drop(f);
      this.feedList = [...this.feeds.values()];
    }
  }

  /** A feed leaves: what it finished and did not commit is remembered. */
  private drop(f: PartitionFeed): void {
    if (this.feeds.get(f.partition) === f) this.feeds.delete(f.partition);
    this.commits.left(f);
  }
}
