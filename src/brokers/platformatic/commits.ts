import type { Consumer as PkConsumer } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import type { Clock, Logger, Timer } from '../../core/ports.js';
import { Waiters } from '../../core/waiters.js';
import type { Feed } from './feed.js';

const SYSTEM_CLOCK = new SystemClock();

/** What {@link FeedCommits} works with: the member's parts it shares with its `PlatformaticConsumer`. */
export interface FeedCommitsParts {
  readonly topic: string;
  readonly log: Logger;
  /** The app's clock, on which the periodic commits run. */
  readonly clock: Clock;
  /** How long a commit waits at most for a classic rebalance's join. */
  readonly rebalanceTimeoutMs: number;
  consumer(): PkConsumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  /** The feeds whose finished work is committed: those owned, and those being let go. */
  feeds(): Iterable<Feed>;
  closing(): boolean;
}

/**
 * The group's offsets of a member's feeds: committed up to what the app finished, on the app's clock and when
 * asked (`flush`), one request at a time. In a classic rebalance a commit would carry the old generation: the
 * coordinator refuses it, and the client joins again for it, which starts another rebalance; so a commit waits
 * for the join (the rebalance timeout at most) and goes with the new generation.
 */
export class FeedCommits {
  private committing: Promise<void> | undefined;
  /** The request after the one under way, which every flush meanwhile shares. */
  private queued: Promise<void> | undefined;
  private failing = false;
  private timer: Timer | undefined;
  /** A classic rebalance began, and the member has not joined again. */
  private rejoining = false;
  private readonly joinedAgain = new Waiters();

  constructor(private readonly parts: FeedCommitsParts) {}

  /** Commits every `ms` on the app's clock, until `cancel`. */
  every(ms: number): void {
    this.timer = this.parts.clock.setTimer(ms, () => {
      if (this.parts.closing()) return;
      this.every(ms);
      void this.flush().catch(() => {});
    });
  }

  cancel(): void {
    this.timer?.cancel();
  }

  /** A classic rebalance began: commits wait for the join. */
  rebalanceBegan(): void {
    this.rejoining = true;
  }

  /** The member joined (again), or is closing: commits go on. */
  joined(): void {
    this.rejoining = false;
    this.joinedAgain.wake();
  }

  /**
   * Sends every pending commit; one request at a time, the callers meanwhile sharing the next. (Were each to
   * queue a request of its own, the periodic commits would pile up while the broker is away, each failing only
   * after the client's retries, and a revoke's flush would wait behind all of them.)
   */
  flush(): Promise<void> {
    const committing = this.committing;
    if (committing === undefined) return this.sendNow();
    const next = (): Promise<void> => {
      this.queued = undefined;
      return this.sendNow();
    };
    this.queued ??= committing.then(next, next);
    return this.queued;
  }

  private sendNow(): Promise<void> {
    const sending = this.send().finally(() => {
      if (this.committing === sending) this.committing = undefined;
    });
    this.committing = sending;
    return sending;
  }

  private async send(): Promise<void> {
    if (this.rejoining && !this.parts.closing()) await this.rejoined();
    const consumer = this.parts.consumer();
    const sent: [Feed, number][] = [];
    for (const f of this.parts.feeds()) if (f.pending()) sent.push([f, f.committable!]);
    if (consumer === undefined || sent.length === 0) return;
    const topic = this.parts.topic;
    const offsets = sent.map(([f, c]) => ({
      topic,
      partition: f.partition,
      offset: BigInt(c),
      leaderEpoch: f.leaderEpoch,
    }));
    try {
      await consumer.commit({ offsets });
      for (const [f, c] of sent) f.committed = Math.max(f.committed ?? -1, c);
      this.failing = false;
    } catch (error) {
      this.parts.log[this.failing ? 'debug' : 'warn']('commit not taken; trying again', { error });
      this.failing = true;
    }
  }

  /** Resolves once the member joined again, is closing, or after the rebalance timeout. */
  private rejoined(): Promise<void> {
    return new Promise((resolve) => {
      const timer = SYSTEM_CLOCK.setTimer(this.parts.rebalanceTimeoutMs, resolve);
      void this.joinedAgain.next().then(() => {
        timer.cancel();
        resolve();
      });
    });
  }
}
