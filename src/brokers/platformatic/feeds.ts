import type { InboundMessage } from '../../core/message.js';
import { Feed } from './feed.js';

/**
 * The partitions a {@link PlatformaticConsumer} hands out to the app, as feeds: those owned, those being taken
 * (their `onAssign` not settled: nothing of them is handed out yet) and those let go whose revoke is settling
 * (their finished work is still committed, and no run of them starts). The consumer decides, from the group,
 * what comes and goes; this keeps the books.
 */
export class Feeds {
  private readonly owned = new Map<number, Feed>();
  /** The owned feeds as an array, for `take`, and where its next round starts. */
  private list: Feed[] = [];
  private cursor = 0;
  /** Feeds revoked whose work the app is settling: their commits still go out. */
  private readonly leaving = new Set<Feed>();
  /**
   * Partitions whose revoke has not settled (the app's `onRevoke` under way, or queued behind an earlier one), by
   * how many: a run handed out before the revoke does not start, even once the partition is assigned again.
   */
  private readonly unsettled = new Map<number, number>();
  /** Partitions assigned whose `onAssign` has not settled, and the feed each waits with. */
  private readonly assigning = new Map<number, Feed>();

  get size(): number {
    return this.owned.size;
  }

  get(partition: number): Feed | undefined {
    return this.owned.get(partition);
  }

  has(partition: number): boolean {
    return this.owned.has(partition);
  }

  /** Owned, and its `onAssign` settled: what is read of it may be handed out. */
  ready(partition: number): boolean {
    return this.owned.has(partition) && !this.assigning.has(partition);
  }

  /** A revoke of `partition` is settling. */
  settling(partition: number): boolean {
    return this.unsettled.has(partition);
  }

  partitions(): number[] {
    return [...this.owned.keys()];
  }

  entries(): IterableIterator<[number, Feed]> {
    return this.owned.entries();
  }

  /** The feeds whose finished work is committed: those owned and those leaving. */
  committing(): Feed[] {
    return [...this.owned.values(), ...this.leaving];
  }

  /** Takes `partitions`, each waiting for its `onAssign` until {@link taken} is told. */
  add(partitions: readonly number[]): Feed[] {
    const feeds = partitions.map((p) => new Feed(p));
    for (const feed of feeds) {
      this.owned.set(feed.partition, feed);
      this.assigning.set(feed.partition, feed);
    }
    this.list = [...this.owned.values()];
    return feeds;
  }

  /** The `onAssign` of `feeds` settled. Only these: a partition revoked and assigned again waits for its own. */
  taken(feeds: readonly Feed[]): void {
    for (const feed of feeds) if (this.assigning.get(feed.partition) === feed) this.assigning.delete(feed.partition);
  }

  /**
   * Lets `partitions` go: nothing more of them is handed out or read, and they are settling until {@link settled}
   * is told. Returns their feeds (those owned), with where each one's reading resumes, should it come back.
   */
  remove(partitions: readonly number[]): { feeds: Feed[]; resumes: Map<number, number> } {
    const feeds = partitions.map((p) => this.owned.get(p)).filter((f): f is Feed => f !== undefined);
    const resumes = new Map<number, number>();
    for (const f of feeds) {
      const resume = f.resume();
      if (resume !== undefined) resumes.set(f.partition, resume);
      f.revoked = true;
      f.clear();
      this.owned.delete(f.partition);
      if (this.assigning.get(f.partition) === f) this.assigning.delete(f.partition);
      this.leaving.add(f);
      this.unsettled.set(f.partition, (this.unsettled.get(f.partition) ?? 0) + 1);
    }
    if (feeds.length > 0) this.list = [...this.owned.values()];
    return { feeds, resumes };
  }

  /** The revoke of `feeds` settled: their commits are done with. */
  settled(feeds: readonly Feed[]): void {
    for (const f of feeds) {
      this.leaving.delete(f);
      const n = (this.unsettled.get(f.partition) ?? 1) - 1;
      if (n > 0) this.unsettled.set(f.partition, n);
      else this.unsettled.delete(f.partition);
    }
  }

  /**
   * Up to `max` messages, at most `perPartition(p)` of partition p, from ready feeds that are not paused; from a
   * partition further on each time, so that one partition's steady stream does not hold the others back.
   */
  take(max: number, perPartition?: (partition: number) => number): InboundMessage[] {
    const out: InboundMessage[] = [];
    const feeds = this.list;
    const n = feeds.length;
    this.cursor = n > 0 ? (this.cursor + 1) % n : 0;
    for (let k = 0; k < n; k++) {
      const feed = feeds[(this.cursor + k) % n]!;
      if (out.length >= max) break;
      if (feed.paused || this.assigning.has(feed.partition) || feed.buffered() === 0) continue;
      const room = Math.min(max - out.length, perPartition ? perPartition(feed.partition) : Infinity);
      if (room > 0) feed.takeInto(out, room);
    }
    return out;
  }

  /** Messages read into the owned feeds and not taken. */
  backlog(): number {
    let n = 0;
    for (const f of this.list) n += f.buffered();
    return n;
  }

  /** Marks `offset` of `partition` finished: in the feed leaving, while one is, else the owned one. */
  commit(partition: number, offset: number): void {
    for (const f of this.leaving) if (f.partition === partition) return f.markCommittable(offset);
    this.owned.get(partition)?.markCommittable(offset);
  }

  clear(): void {
    this.owned.clear();
    this.list = [];
  }
}
