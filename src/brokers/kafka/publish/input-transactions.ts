import type { Admin, Producer } from 'kafkajs';
import type { SluiceError } from '../../../core/errors.js';
import type { Logger, StagedMessage } from '../../../core/ports.js';
import type { Kafka } from '../kafkajs.js';
import { fencingProducer, isFenced } from '../transactional-producer.js';
import { PartitionTransactions, type PartitionWriters } from './partition-transactions.js';
import { byTopic, isRefusal, publishError } from './publishing.js';

/** What {@link kafkajsTransactions} is made with (by `KafkaBroker.transactions`). */
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
 * Exactly-once on kafkajs (see {@link PartitionTransactions}): a commit is `sendBatch`, `sendOffsets` and
 * `commit` on the partition's producer. kafkajs's `sendOffsets` sends the group's ID only.
 */
export function kafkajsTransactions(s: InputTransactionSettings): PartitionTransactions<Producer> {
  const writers: PartitionWriters<Producer> = {
    group: s.group,
    topic: s.topic,
    log: s.log,
    ready: s.ready,
    isFenced,
    fence: (partition) => fencingProducer(s.kafka, `sluice.eos.${s.group}.${s.topic}.${partition}`),
    letGo: (producer) =>
      producer.disconnect().catch((error: unknown) => s.log.debug('producer disconnect failed', { error })),
    refusal: (topics, error) => (isRefusal(error) ? (publishError(topics, error) as SluiceError) : undefined),
    async commitOnce(producer: Producer, partition: number, offset: number, messages: readonly StagedMessage[]) {
      const records = byTopic(messages);
      const transaction = await producer.transaction();
      try {
        if (records.size > 0)
          await transaction.sendBatch({
            topicMessages: [...records].map(([t, list]) => ({ topic: t, messages: list })),
          });
        await transaction.sendOffsets({
          consumerGroupId: s.group,
          topics: [{ topic: s.topic, partitions: [{ partition, offset: String(offset) }] }],
        });
        await transaction.commit();
      } catch (error) {
        if (transaction.isActive()) await transaction.abort().catch(() => {});
        throw error;
      }
    },
    async committed(partition) {
      const [fetched] = await s.admin().fetchOffsets({ groupId: s.group, topics: [s.topic] });
      const offset = Number(fetched?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
      return offset >= 0 ? offset : 0;
    },
  };
  return new PartitionTransactions(writers);
}
