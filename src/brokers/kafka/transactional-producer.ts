import type { Producer } from 'kafkajs';
import { Partitioners, type Kafka } from './kafkajs.js';

/**
 * The producer's retries: for ever (kafkajs's default for an idempotent producer), the first after 10 ms.
 * A transaction begun right after a commit is answered CONCURRENT_TRANSACTIONS until the commit's markers are
 * written, a few milliseconds; kafkajs's default first retry, 300 ms, would hold every group commit that long.
 */
export const PRODUCER_RETRY = { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 10, maxRetryTime: 1_000 };

/**
 * A transactional producer of `transactionalId`, connected, that has fenced every earlier producer of the ID:
 * their open transaction is ended, and their later ones are refused (a kafka store's shard, an exactly-once
 * subscriber's input partition). A producer that fails to get there is disconnected.
 */
export async function fencingProducer(kafka: Kafka, transactionalId: string): Promise<Producer> {
  const producer = kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    retry: PRODUCER_RETRY,
    // The murmur2 partitioner of keyed messages (a shard's name their partition), and kafkajs warns without one.
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  try {
    await producer.connect();
    await (await producer.transaction()).abort(); // InitProducerId: the earlier producers are fenced from here on
  } catch (error) {
    await producer.disconnect().catch(() => {});
    throw error;
  }
  return producer;
}

/** True when kafkajs failed because a newer producer with the same transactional id fenced this one. */
export function isFenced(error: unknown): boolean {
  for (
    let e = error as { type?: unknown; cause?: unknown; originalError?: unknown } | undefined, depth = 0;
    e && depth < 8;
    depth++
  ) {
    if (e.type === 'INVALID_PRODUCER_EPOCH' || e.type === 'PRODUCER_FENCED') return true;
    if (/Unknown error code 90\b/.test(String((e as { message?: unknown }).message))) return true; // PRODUCER_FENCED: kafkajs 2.2 has no name for it
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return false;
}
