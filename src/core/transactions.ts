/**
 * The port of exactly-once: what a broker gives a subscriber marked `exactlyOnce`, so that what its handler
 * publishes and the input offsets it finished are committed together, in one transaction per input partition.
 */
import type { PublishOptions } from './message.js';

/**
 * A message a handler published under exactly-once: held until the transaction of the offset it goes with.
 *
 * @category Brokers
 */
export interface StagedMessage {
  /** The topic it goes to. */
  readonly topic: string;
  /** The value, as `Broker.publish` takes it. */
  readonly value: unknown;
  /** Its key, headers, partition, as `Broker.publish` takes them. */
  readonly options?: PublishOptions | undefined;
}

/**
 * One consumer group's transactions over the partitions of one topic it reads (see
 * {@link Broker.transactions}). Each input partition has a writer of its own, fenced per partition: opening
 * partition p here ends what an earlier holder of p (another instance, or a process killed) had open, and
 * refuses every commit it tries after.
 *
 * An adapter promises:
 * - `commit(p, offset, messages)` is all or nothing: readers that read committed see the messages exactly
 *   when the group's offset of p is `offset`, never one without the other;
 * - a commit that fails for a reason that may pass (the broker away, a timeout whose outcome is unknown) is
 *   found out and tried again inside `commit`, without publishing twice; `commit` rejects only when it cannot
 *   go on: `TRANSACTION_FENCED` (p was opened elsewhere since: the new holder reads from the offset committed
 *   last), `PUBLISH_REFUSED` (a message is refused for good; nothing of the commit was made), or a closed writer.
 *
 * @category Brokers
 */
export interface InputTransactions {
  /**
   * Takes `partition` for this member: fences every earlier holder (an open transaction of theirs is ended,
   * committed or aborted, before this resolves), then resolves with the offset the group has committed for
   * it: where its reading resumes. Deliveries below it were committed by an earlier holder (a reader that
   * fetched its position before the fence may still hand them out: the app skips them).
   */
  open(partition: number): Promise<number>;
  /**
   * In one transaction: publishes `messages`, in order, and commits `offset` as the group's offset of
   * `partition`. Resolves once committed. One commit of a partition at a time.
   */
  commit(partition: number, offset: number, messages: readonly StagedMessage[]): Promise<void>;
  /** Lets `partition` go: its writer closes (a commit under way is let finish). */
  release(partition: number): Promise<void>;
}
