import type { InboundMessage } from '../../core/message.js';
import type { Logger } from '../../core/ports.js';
import { REQUESTS_PER_RUN } from '../kafka/consumer/request-batches.js';
import type { Record } from './feed.js';
import { PlatformaticInbound } from './inbound.js';

/** What {@link RequestFeeds} works with: the member's parts it shares with its `PlatformaticConsumer`. */
export interface RequestFeedsParts {
  /** The requests topic (see `ConsumeRequest.requests`). */
  readonly topic: string;
  /** Handles a run of a partition's messages; resolves with how many of them, from the first, were handled. */
  readonly handle: (partition: number, messages: readonly InboundMessage[]) => Promise<number>;
  /** Commits `offset` as the group's offset of the requests topic's `partition`; never rejects. */
  readonly commit: (partition: number, offset: number, leaderEpoch: number) => Promise<void>;
  /** Whether the app's `onAssign` of the topic's `partition` has settled: its requests wait until it has. */
  readonly ready: (partition: number) => boolean;
  /** How long requests not handled (their shard is not here now: a rebalance is coming) wait to be tried again. */
  readonly retryMs: number;
  readonly log: Logger;
}

/** One owned partition of the requests topic: messages read and not handled yet, handled one run at a time. */
class RequestPartition {
  messages: Record[] = [];
  /** The offset after the last message read: one read again below it (a rewind at a join) is dropped. */
  next: number | undefined;
  /** The offset of the first message read in this assignment. */
  first: number | undefined;
  /** The offset after the last message handled: where the partition's reading stands. */
  position: number | undefined;
  running = false;
  dropped = false;

  constructor(readonly partition: number) {}
}

/**
 * The member's partitions of its requests topic, co-owned with the same partitions of its topic: what the
 * stream reads of them never goes through `take()`. Once the app's `onAssign` of the partition settled, its
 * messages are handed to `handle` in runs of at most {@link REQUESTS_PER_RUN}, one run of a partition at a
 * time, and what was handled is committed when the run ends. Messages `handle` did not handle are tried
 * again after `retryMs`, for as long as the partition is owned here; then its next owner reads them from the
 * group's offset.
 */
export class RequestFeeds {
  private readonly parts = new Map<number, RequestPartition>();

  constructor(private readonly s: RequestFeedsParts) {}

  get topic(): string {
    return this.s.topic;
  }

  /**
   * Makes the owned partitions `now`: those that came are taken, those that went are dropped. Returns where
   * the reading of each partition that went resumes (see `drop`).
   */
  sync(now: ReadonlySet<number>): Map<number, number> {
    const resumes = this.drop([...this.parts.keys()].filter((p) => !now.has(p)));
    for (const p of now) if (!this.parts.has(p)) this.parts.set(p, new RequestPartition(p));
    return resumes;
  }

  /**
   * Lets `partitions` go: what was read of them and not handled is dropped (a run under way ends there).
   * Returns where the reading of each resumes: after what was handled, else where this assignment began.
   */
  drop(partitions: readonly number[]): Map<number, number> {
    const resumes = new Map<number, number>();
    for (const p of partitions) {
      const part = this.parts.get(p);
      if (part === undefined) continue;
      part.dropped = true;
      part.messages = [];
      this.parts.delete(p);
      const resume = part.position ?? part.first;
      if (resume !== undefined) resumes.set(p, resume);
    }
    return resumes;
  }

  owned(): number[] {
    return [...this.parts.keys()];
  }

  /** Keeps `m` for its partition, when owned and not read before; true when kept. */
  admit(m: Record): boolean {
    const part = this.parts.get(m.partition);
    const offset = Number(m.offset);
    if (part === undefined || (part.next !== undefined && offset < part.next)) return false;
    part.next = offset + 1;
    part.first ??= offset;
    part.messages.push(m);
    this.kick(part);
    return true;
  }

  /** Messages read and not handled yet, over every partition. */
  buffered(): number {
    let n = 0;
    for (const part of this.parts.values()) n += part.messages.length;
    return n;
  }

  /** Where the reading of `partition` stands (the offset after the last message handled), if it moved here. */
  position(partition: number): number | undefined {
    return this.parts.get(partition)?.position;
  }

  /** Starts handling every partition that waits (after an `onAssign` settled). */
  kickAll(): void {
    for (const part of this.parts.values()) this.kick(part);
  }

  private kick(part: RequestPartition): void {
    if (part.running || part.dropped || part.messages.length === 0 || !this.s.ready(part.partition)) return;
    part.running = true;
    void this.run(part).finally(() => {
      part.running = false;
    });
  }

  /** Hands the partition's messages to `handle`, run after run, while it owns them and has some. */
  private async run(part: RequestPartition): Promise<void> {
    while (!part.dropped && part.messages.length > 0) {
      const records = part.messages.slice(0, REQUESTS_PER_RUN);
      const n = await this.handle(part.partition, records);
      if (part.dropped) return;
      if (n > 0) {
        const last = records[n - 1]!;
        part.messages.splice(0, n);
        part.position = Number(last.offset) + 1;
        await this.s.commit(part.partition, part.position, last.leaderEpoch);
      }
      if (n < records.length) {
        await new Promise((resolve) => setTimeout(resolve, this.s.retryMs));
        if (!this.s.ready(part.partition)) return; // a new assignment: kicked again once it settled
      }
    }
  }

  /** Hands a run to `handle`: how many of them, from the first, were handled (0 when it rejects). */
  private async handle(partition: number, records: Record[]): Promise<number> {
    const { log } = this.s;
    let n: number;
    try {
      const handled = await this.s.handle(
        partition,
        records.map((r) => new PlatformaticInbound(r)),
      );
      n = Math.max(0, Math.min(records.length, Math.floor(handled)));
    } catch (error) {
      log.debug('requests were not handled; they are tried again', { partition, offset: records[0]!.offset, error });
      return 0;
    }
    if (n < records.length)
      log.debug('requests were not handled; they are tried again', { partition, offset: records[n]!.offset });
    return n;
  }
}
