import type { Message, PartitionMetadata, RecordMetadata } from 'kafkajs';
import { Partitioners } from '../kafkajs.js';
import { PartitionBatches, type BatchingClient, type PartitionCounts } from './partition-batches.js';
import { isRefusal } from './publishing.js';

export { BATCH_BYTES, type PartitionCounts } from './partition-batches.js';

/** Sends messages of one topic in one request (kafkajs's `producer.send`). */
export type SendMessages = (topic: string, messages: Message[]) => Promise<RecordMetadata[]>;

/** kafkajs's default partitioner: a key's partition does not depend on the topic. */
const KEY_PARTITIONER = Partitioners.DefaultPartitioner();
/** Partition metadata of `n` partitions, as the partitioner reads it (only the count counts), by `n`. */
const metadataOf = new Map<number, PartitionMetadata[]>();

/**
 * The partition of `partitions` that a message with `key` lands in: kafkajs's default partitioner, murmur2
 * over the key's bytes (a string's UTF-8) as Java clients hash it.
 */
export function keyPartition(key: string | Buffer, partitions: number): number {
  let metadata = metadataOf.get(partitions);
  if (metadata === undefined) {
    metadata = Array.from({ length: partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    }));
    if (metadataOf.size < 64) metadataOf.set(partitions, metadata);
  }
  return KEY_PARTITIONER({ topic: '', partitionMetadata: metadata, message: { key, value: null } });
}

/** kafkajs's partitioner and refusals, for {@link PartitionBatches}. */
const KAFKAJS: BatchingClient = { partitionOf: keyPartition, refused: isRefusal };

/**
 * Publishes through kafkajs gathered by partition (see {@link PartitionBatches}): a turn's publishes to one
 * partition go in one `producer.send`.
 */
export class PublishBatches extends PartitionBatches<Message, RecordMetadata[]> {
  constructor(send: SendMessages, partitions: PartitionCounts = () => undefined) {
    super(send, partitions, KAFKAJS);
  }
}
