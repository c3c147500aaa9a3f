import { deadlineIn } from '../core/deadline.js';
import type { InboundMessage } from '../core/message.js';
import type { Clock, Consumer, Logger, StagedMessage } from '../core/ports.js';
import { Waiters } from '../core/waiters.js';
import { Watermark } from '../dispatch/watermark.js';
import type { TransactionCommits } from './transaction-commits.js';

/** What the offsets of a subscription are bounded by. */
export interface OffsetSettings {
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a revoke waits for the revoked partitions' in-flight work. */
  readonly revokeTimeoutMs: number;
  /** The most delivered-but-uncommittable offsets per partition before that partition is paused. */
  readonly maxUncommitted: number;
}

/**
 * The Ledger's book of offsets: each partition's watermark, what it commits, when it pauses and resumes a
 * partition, and how a revoke waits for the revoked partitions' in-flight work.
 */
export class Offsets {
  private consumer: Consumer | undefined = undefined;
  private readonly marks = new Map<number, Watermark>();
  /** Woken whenever a revoked partition's delivery finishes or is abandoned (or a revoke's time runs out). */
  private readonly revokedChanged = new Waiters();

  constructor(
    private readonly settings: OffsetSettings,
    /** An `exactlyOnce` subscription's: watermarks are committed there, with what was published below them. */
    private readonly transactions?: TransactionCommits,
  ) {}

  /** Whether a delivery is to be handled: under exactly-once, not one an earlier holder committed. */
  admits(m: InboundMessage): boolean {
    return this.transactions === undefined || this.transactions.admits(m);
  }

  connect(consumer: Consumer): void {
    this.consumer = consumer;
  }

  /** The watermarks of the partitions with deliveries handed out in this assignment (for metrics and health). */
  watermarks(): IterableIterator<Watermark> {
    return this.marks.values();
  }

  /** Deliveries of `partition` running or waiting for a worker (not those waiting for a retry's backoff). */
  active(partition: number): number {
    const marks = this.marks.get(partition);
    return marks === undefined ? 0 : marks.outstanding - marks.waitingRetry;
  }

  /** Records a delivery as handed out; pauses its partition when its window reached the cap. */
  track(m: InboundMessage): Watermark {
    let marks = this.marks.get(m.partition);
    if (!marks) {
      marks = new Watermark(m.partition, m.offset);
      this.marks.set(m.partition, marks);
    }
    marks.delivered(m.offset);
    if (!marks.paused && marks.window() >= this.settings.maxUncommitted) {
      marks.paused = true;
      this.consumer!.pause(m.partition);
    }
    return marks;
  }

  /**
   * A delivery handled under exactly-once finished, having published `staged`: they are committed with its
   * offset (unless its partition was revoked meanwhile: then they are dropped, and it is handled again).
   */
  completeWith(marks: Watermark, message: InboundMessage, staged: readonly StagedMessage[] | undefined): void {
    if (!marks.revoked) this.transactions?.hold(message, staged);
    this.complete(marks, message.offset);
  }

  /** A delivery finished: its offset may be committed once everything below it is. */
  complete(marks: Watermark, offset: number): void {
    const moved = marks.complete(offset);
    if (marks.revoked) return this.revokedChanged.wake();
    this.quietCheck(marks);
    if (!moved) return;
    const consumer = this.consumer!;
    this.commit(marks);
    if (marks.paused && marks.window() < this.settings.maxUncommitted) {
      marks.paused = false;
      consumer.resume(marks.partition);
    }
  }

  /** A delivery that will not finish here (revoked, stopped, not recorded): it stays uncommitted. */
  abandon(marks: Watermark): void {
    marks.abandon();
    if (marks.revoked) this.revokedChanged.wake();
    else this.quietCheck(marks);
  }

  /** Tells the consumer when nothing of the partition runs or waits for a worker any more. */
  quietCheck(marks: Watermark): void {
    if (marks.outstanding === marks.waitingRetry) this.consumer?.settled?.(marks.partition);
  }

  /** Marks the partitions revoked and forgets them: their late results count nowhere. */
  takeAway(partitions: readonly number[]): Watermark[] {
    const revoked: Watermark[] = [];
    for (const p of partitions) {
      const marks = this.marks.get(p);
      if (!marks) continue;
      marks.revoked = true;
      this.marks.delete(p);
      revoked.push(marks);
    }
    return revoked;
  }

  /** Waits (at most `revokeTimeoutMs`) for the revoked partitions' in-flight work, then commits them. */
  async commitRevoked(revoked: readonly Watermark[], partitions: readonly number[]): Promise<void> {
    const busy = (): boolean => revoked.some((m) => m.outstanding > 0);
    if (busy()) {
      let timedOut = false;
      // A rebalance (another member's join, or a stop) waits for this: it keeps the process alive.
      const onTimeout = (): void => {
        timedOut = true;
        this.revokedChanged.wake();
      };
      const timer = this.settings.clock.setTimer(this.settings.revokeTimeoutMs, onTimeout, { keepAlive: true });
      while (busy() && !timedOut) await this.revokedChanged.next();
      timer.cancel();
      if (timedOut)
        this.settings.log.warn('revoke: in-flight work did not finish in time; it will be delivered again', {
          partitions,
        });
    }
    const transactions = this.transactions;
    if (transactions !== undefined) {
      const deadline = deadlineIn(this.settings.clock, this.settings.revokeTimeoutMs, { keepAlive: true });
      const marks = new Map(revoked.map((m) => [m.partition, m.watermark()]));
      await transactions.release(partitions, marks, deadline.passed).finally(() => deadline.cancel());
      return;
    }
    for (const marks of revoked) this.consumer?.commit(marks.partition, marks.watermark());
    await this.consumer?.flush();
  }

  /**
   * At shutdown: every partition commits what finished, and later results count nowhere. Under exactly-once,
   * resolves once the transactions ended, or `deadline` passed.
   */
  async commitAll(deadline: Promise<void>): Promise<void> {
    const marks = new Map<number, number>();
    for (const m of this.marks.values()) {
      m.revoked = true;
      marks.set(m.partition, m.watermark());
      if (this.transactions === undefined) this.consumer?.commit(m.partition, m.watermark());
    }
    this.marks.clear();
    await this.transactions?.release(this.transactions.held(), marks, deadline);
  }

  /** The partition's watermark moved: it may be committed (under exactly-once, in a transaction). */
  private commit(marks: Watermark): void {
    if (this.transactions !== undefined) this.transactions.commit(marks.partition, marks.watermark());
    else this.consumer!.commit(marks.partition, marks.watermark());
  }
}
