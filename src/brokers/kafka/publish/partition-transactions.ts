import { SluiceError } from '../../../core/errors.js';
import type { InputTransactions, Logger, StagedMessage } from '../../../core/ports.js';

/** How many times a commit whose outcome is unknown is found out and tried again before `commit` rejects. */
const ATTEMPTS = 5;

/**
 * What one Kafka client gives {@link PartitionTransactions}: transactional producers, one per input partition,
 * whose `transactionalId` names the group, the topic and the partition.
 */
export interface PartitionWriters<W> {
  readonly group: string;
  readonly topic: string;
  readonly log: Logger;
  /** A new writer of `partition`'s transactional ID, which fenced every earlier one (their open transaction ended). */
  fence(partition: number): Promise<W>;
  /**
   * One transaction on `writer`: `messages`, in order, then `offset` as the group's offset of `partition`, then the
   * commit. On a failure the transaction is ended (aborted where it can be) before it rejects.
   */
  commitOnce(writer: W, partition: number, offset: number, messages: readonly StagedMessage[]): Promise<void>;
  /** Closes `writer`; never rejects. */
  letGo(writer: W): Promise<void>;
  /** The offset the group has committed of `partition`; 0 where it has none (every offset is then new). */
  committed(partition: number): Promise<number>;
  /** Connects, and makes or checks an output topic (once per topic): before the first transaction to it. */
  ready(topic: string): Promise<void>;
  /** True when a newer writer of the same transactional ID fenced this one. */
  isFenced(error: unknown): boolean;
  /** The `PUBLISH_REFUSED` error when the broker refused a message for good; undefined otherwise. */
  refusal(topics: string, error: unknown): SluiceError | undefined;
}

/**
 * Kafka's exactly-once from topic to topic, as Kafka Streams had it before KIP-447, on any client that gives
 * {@link PartitionWriters}: a transactional producer per input partition, so that whoever opens the partition
 * fences whoever had it (Kafka's InitProducerId ends the earlier holder's open transaction and refuses its later
 * ones). A commit is one transaction: the messages, the group's offset, and the commit; consumers reading
 * committed see the messages only with the offset. The offset goes with the group's ID only (not its
 * generation, which KIP-447 would check), so the fencing per partition is what keeps a member that lost its
 * partition from committing.
 */
export class PartitionTransactions<W> implements InputTransactions {
  private readonly writers = new Map<number, W>();
  /** Partitions whose last transaction's outcome was not found out: the next commit finds it out first. */
  private readonly unsure = new Set<number>();

  constructor(private readonly w: PartitionWriters<W>) {}

  /** Opens the partition with a new writer (the one it had, if any, fenced and let go). */
  async open(partition: number): Promise<number> {
    const writer = await this.w.fence(partition);
    const before = this.writers.get(partition);
    this.writers.set(partition, writer);
    if (before !== undefined) await this.w.letGo(before);
    return this.w.committed(partition);
  }

  async commit(partition: number, offset: number, messages: readonly StagedMessage[]): Promise<void> {
    const topics = [...new Set(messages.map((m) => m.topic))];
    for (const t of topics) await this.w.ready(t);
    for (let attempt = 1; ; attempt++) {
      if (this.unsure.has(partition) && (await this.findOut(partition)) >= offset) return;
      const writer = this.writerOf(partition);
      try {
        return await this.w.commitOnce(writer, partition, offset, messages);
      } catch (error) {
        if (this.w.isFenced(error)) throw this.fenced(partition, error);
        const refused = this.w.refusal(topics.join(', '), error);
        if (refused !== undefined) throw refused;
        if (attempt === ATTEMPTS) throw error;
        this.w.log.warn('exactlyOnce: a transaction failed; finding out whether it committed', {
          partition,
          offset,
          error,
        });
        this.unsure.add(partition);
      }
    }
  }

  /**
   * A transaction's outcome is unknown (a timeout, the broker away): a new writer of the same ID ends it, and
   * the group's offset tells whether it committed.
   */
  private async findOut(partition: number): Promise<number> {
    const committed = await this.open(partition);
    this.unsure.delete(partition);
    return committed;
  }

  async release(partition: number): Promise<void> {
    const writer = this.writers.get(partition);
    if (writer === undefined) return;
    this.writers.delete(partition);
    this.unsure.delete(partition);
    await this.w.letGo(writer);
  }

  private writerOf(partition: number): W {
    const writer = this.writers.get(partition);
    if (writer === undefined) throw this.fenced(partition, undefined);
    return writer;
  }

  private fenced(partition: number, cause: unknown): SluiceError {
    const { group, topic } = this.w;
    return new SluiceError(
      'TRANSACTION_FENCED',
      `kafka: partition ${partition} of "${topic}" (group "${group}") is held by another producer now`,
      cause === undefined ? undefined : { cause },
    );
  }
}
