import type { Admin, Message, Producer } from 'kafkajs';
import { SluiceError } from '../../../core/errors.js';
import type { InputTransactions, Logger, StagedMessage } from '../../../core/ports.js';
import type { Kafka } from '../kafkajs.js';
import { fencingProducer, isFenced } from '../transactional-producer.js';
import { byTopic, isRefusal, publishError } from './publishing.js';

/** How many times a commit whose outcome is unknown is found out and tried again before `commit` rejects. */
const ATTEMPTS = 5;

/** What {@link KafkaInputTransactions} is made with (by `KafkaBroker.transactions`). */
export interface InputTransactionSettings {
  readonly kafka: Kafka;
  /** The broker's admin client, once connected. */
  readonly admin: () => Admin;
  readonly group: string;
  readonly topic: string;
  /** Connects, and makes or checks an output topic (once per topic): before the first transaction to it. */
  readonly ready: (topic: string) => Promise<void>;
  readonly log: Logger;
}

/**
 * Kafka's exactly-once from topic to topic, as Kafka Streams had it before KIP-447: a transactional producer
 * per input partition, its `transactionalId` naming the group, the topic and the partition, so that whoever
 * opens the partition fences whoever had it (Kafka's InitProducerId ends the earlier holder's open transaction
 * and refuses its later ones). A commit is one transaction: the messages, `sendOffsets` of the group's offset,
 * and the commit; consumers reading committed (kafkajs's default, and Sluice's) see the messages only with the
 * offset. kafkajs's `sendOffsets` sends the group's ID only (not its generation, which KIP-447 would check),
 * so the fencing per partition is what keeps a member that lost its partition from committing.
 */
export class KafkaInputTransactions implements InputTransactions {
  private readonly producers = new Map<number, Producer>();
  /** Partitions whose last transaction's outcome was not found out: the next commit finds it out first. */
  private readonly unsure = new Set<number>();

  constructor(private readonly s: InputTransactionSettings) {}

  /** Opens the partition with a new producer (the one it had, if any, fenced and let go). */
  async open(partition: number): Promise<number> {
    const { kafka, group, topic } = this.s;
    const producer = await fencingProducer(kafka, `sluice.eos.${group}.${topic}.${partition}`);
    const before = this.producers.get(partition);
    this.producers.set(partition, producer);
    if (before !== undefined) await this.letGo(before);
    return this.committed(partition);
  }

  async commit(partition: number, offset: number, messages: readonly StagedMessage[]): Promise<void> {
    const records = byTopic(messages);
    for (const t of records.keys()) await this.s.ready(t);
    for (let attempt = 1; ; attempt++) {
      if (this.unsure.has(partition) && (await this.findOut(partition)) >= offset) return;
      const producer = this.producerOf(partition);
      try {
        return await this.once(producer, partition, offset, records);
      } catch (error) {
        if (isFenced(error)) throw this.fenced(partition, error);
        if (isRefusal(error)) throw publishError([...records.keys()].join(', '), error);
        if (attempt === ATTEMPTS) throw error;
        this.s.log.warn('exactlyOnce: a transaction failed; finding out whether it committed', {
          partition,
          offset,
          error,
        });
        this.unsure.add(partition);
      }
    }
  }

  /**
   * A transaction's outcome is unknown (a timeout, the broker away): a new producer of the same ID ends it, and
   * the group's offset tells whether it committed.
   */
  private async findOut(partition: number): Promise<number> {
    const committed = await this.open(partition);
    this.unsure.delete(partition);
    return committed;
  }

  async release(partition: number): Promise<void> {
    const producer = this.producers.get(partition);
    if (producer === undefined) return;
    this.producers.delete(partition);
    this.unsure.delete(partition);
    await this.letGo(producer);
  }

  private async letGo(producer: Producer): Promise<void> {
    await producer.disconnect().catch((error: unknown) => this.s.log.debug('producer disconnect failed', { error }));
  }

  private async once(
    producer: Producer,
    partition: number,
    offset: number,
    records: ReadonlyMap<string, Message[]>,
  ): Promise<void> {
    const { group, topic } = this.s;
    const transaction = await producer.transaction();
    try {
      if (records.size > 0)
        await transaction.sendBatch({ topicMessages: [...records].map(([t, list]) => ({ topic: t, messages: list })) });
      await transaction.sendOffsets({
        consumerGroupId: group,
        topics: [{ topic, partitions: [{ partition, offset: String(offset) }] }],
      });
      await transaction.commit();
    } catch (error) {
      if (transaction.isActive()) await transaction.abort().catch(() => {});
      throw error;
    }
  }

  /** The offset the group has committed of `partition`; 0 where it has none (every offset is then new). */
  private async committed(partition: number): Promise<number> {
    const { group, topic } = this.s;
    const [fetched] = await this.s.admin().fetchOffsets({ groupId: group, topics: [topic] });
    const offset = Number(fetched?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
    return offset >= 0 ? offset : 0;
  }

  private producerOf(partition: number): Producer {
    const producer = this.producers.get(partition);
    if (producer === undefined) throw this.fenced(partition, undefined);
    return producer;
  }

  private fenced(partition: number, cause: unknown): SluiceError {
    const { group, topic } = this.s;
    return new SluiceError(
      'TRANSACTION_FENCED',
      `kafka: partition ${partition} of "${topic}" (group "${group}") is held by another producer now`,
      cause === undefined ? undefined : { cause },
    );
  }
}
