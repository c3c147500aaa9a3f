import type { InboundMessage } from '../../core/message.js';

/**
 * One owned partition of a Kafka consumer: the messages fetched and not yet taken, how far the app has
 * finished (the committable offset), and what was last sent to the group coordinator.
 */
export class PartitionFeed {
  private messages: InboundMessage[] = [];
  private head = 0;
  /** The offset after the last message taken: where this member's reading stands. */
  position: number | undefined = undefined;
  /** Everything below is finished: what may be committed. */
  committable: number | undefined = undefined;
  /** The last offset the coordinator accepted. */
  committed: number | undefined = undefined;
  paused = false;
  /** Being revoked: nothing more is handed out; commits still count until the revoke completes. */
  revoked = false;
  private waiters: (() => void)[] = [];
  private target = Number.POSITIVE_INFINITY;

  constructor(readonly partition: number) {}

  append(batch: readonly InboundMessage[]): void {
    if (this.head === this.messages.length) {
      this.messages = [...batch];
      this.head = 0;
    } else this.messages.push(...batch);
  }

  /** Messages fetched and not taken. */
  buffered(): number {
    return this.messages.length - this.head;
  }

  takeInto(out: InboundMessage[], max: number): void {
    const end = Math.min(this.messages.length, this.head + max);
    for (let i = this.head; i < end; i++) out.push(this.messages[i]!);
    if (end > this.head) this.position = this.messages[end - 1]!.offset + 1;
    this.head = end;
    if (this.position !== undefined && this.position >= this.target) this.wake();
  }

  /** Drops what was fetched and not taken (a revoke: the next owner reads it again). */
  clear(): void {
    this.messages = [];
    this.head = 0;
  }

  markCommittable(offset: number): void {
    if (this.committable === undefined || offset > this.committable) this.committable = offset;
  }

  /** Resolves once everything below `offset` has been taken, on `wake()`, or after `ms`. */
  until(offset: number, ms: number): Promise<void> {
    if ((this.position ?? -1) >= offset) return Promise.resolve();
    this.target = offset;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  wake(): void {
    this.target = Number.POSITIVE_INFINITY;
    if (this.waiters.length > 0) for (const w of this.waiters.splice(0)) w();
  }
}
