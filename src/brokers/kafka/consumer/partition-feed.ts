import type { KafkaMessage } from 'kafkajs';
import type { InboundMessage } from '../../../core/message.js';
import type { Clock } from '../../../core/ports.js';
import { KafkaInbound } from '../convert.js';

const NONE: readonly KafkaMessage[] = [];

/**
 * One owned partition of a Kafka consumer: the messages fetched and not yet taken, how far the app has
 * finished (the committable offset), and what was last sent to the group coordinator.
 *
 * The fetched batch is held as kafkajs decoded it — neither copied nor changed — and a message becomes a
 * {@link KafkaInbound} only when it is taken: a batch waiting for room costs no object per message beyond
 * kafkajs's own, and the wrappers live only as long as their delivery (they die young instead of being
 * promoted with the batch).
 */
export class PartitionFeed {
  private messages: readonly KafkaMessage[] = NONE;
  private head = 0;
  /** The offset after the last batch fetched (kafkajs's next fetch starts there). */
  fetchedEnd: number | undefined = undefined;
  /** The offset after the last message taken: where this member's reading stands. */
  position: number | undefined = undefined;
  /** Everything below is finished: what may be committed. */
  committable: number | undefined = undefined;
  /** The last offset the coordinator accepted. */
  committed: number | undefined = undefined;
  /** The offset of the first message this member's first batch of the partition brought. */
  readFrom: number | undefined = undefined;
  /** Messages below it were finished here before (see KafkaConsumer's `finished`): not handed out again. */
  skipBelow: number | undefined = undefined;
  /** Taken away before this member knew (a rebalance kafkajs saw itself): its commits are not sent. */
  lost = false;
  paused = false;
  /** Being revoked: nothing more is handed out; commits still count until the revoke completes. */
  revoked = false;
  private waiters: (() => void)[] = [];
  /** A waiter holds the batch for the partition's running work only: `settled()` wakes it. */
  private waitingForWork = false;
  private target = Number.POSITIVE_INFINITY;

  constructor(
    readonly topic: string,
    readonly partition: number,
    /** The clock `until`'s wait runs on. */
    private readonly clock: Clock,
  ) {}

  /**
   * A fetched batch's messages less those finished here before (`skipBelow`): a partition back with work
   * this member finished and could not commit does not hand that work out again, and commits it — when
   * the group's offset is below it (the first batch starts there), never setting back another member's.
   */
  admit(messages: KafkaMessage[], lastOffset: number): KafkaMessage[] {
    if (messages.length === 0) return messages;
    if (this.readFrom === undefined) {
      this.readFrom = Number(messages[0]!.offset);
      if (this.skipBelow !== undefined && this.readFrom < this.skipBelow) this.markCommittable(this.skipBelow);
      else this.skipBelow = undefined;
    }
    const below = this.skipBelow;
    if (below === undefined) return messages;
    const kept = messages.filter((m) => Number(m.offset) >= below);
    if (kept.length > 0 || lastOffset + 1 >= below) this.skipBelow = undefined;
    return kept;
  }

  /** Adds a fetched batch (kept by reference, never modified). */
  append(batch: readonly KafkaMessage[]): void {
    this.messages = this.head === this.messages.length ? batch : [...this.messages.slice(this.head), ...batch];
    this.head = 0;
  }

  /** Messages fetched and not taken. */
  buffered(): number {
    return this.messages.length - this.head;
  }

  /**
   * Fills `out` from index `at` up to `until` (its end by default), or as far as this feed goes; returns the
   * index after the last.
   */
  takeInto(out: InboundMessage[], at: number, until = out.length): number {
    const messages = this.messages;
    const end = Math.min(messages.length, this.head + until - at);
    let last: KafkaInbound | undefined;
    for (let i = this.head; i < end; i++) {
      last = new KafkaInbound(this.topic, this.partition, messages[i]!);
      out[at++] = last;
    }
    if (last !== undefined) this.position = last.offset + 1;
    if (end === messages.length) {
      this.messages = NONE; // drained: let the batch go as soon as its deliveries do
      this.head = 0;
    } else this.head = end;
    if (this.position !== undefined && this.position >= this.target) this.wake();
    return at;
  }

  /** Drops what was fetched and not taken (a revoke: the next owner reads it again). */
  clear(): void {
    this.messages = NONE;
    this.head = 0;
  }

  markCommittable(offset: number): void {
    if (this.committable === undefined || offset > this.committable) this.committable = offset;
  }

  /**
   * Resolves once everything below `offset` has been taken, on `wake()`, or after `ms`. When everything
   * below it already was, it waits for `wake()` (the app settled the partition) or `ms`.
   */
  until(offset: number, ms: number): Promise<void> {
    if ((this.position ?? -1) < offset) this.target = offset;
    else this.waitingForWork = true;
    return new Promise((resolve) => {
      const timer = this.clock.setTimer(ms, resolve, { keepAlive: true });
      this.waiters.push(() => {
        timer.cancel();
        resolve();
      });
    });
  }

  /** The app has nothing of this partition running any more: wakes a waiter that held the batch for it. */
  settled(): void {
    if (this.waitingForWork) this.wake();
  }

  wake(): void {
    this.target = Number.POSITIVE_INFINITY;
    this.waitingForWork = false;
    if (this.waiters.length > 0) for (const w of this.waiters.splice(0)) w();
  }
}
