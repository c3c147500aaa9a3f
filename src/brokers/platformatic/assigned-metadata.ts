import type { ClusterMetadata, Consumer, MetadataOptions } from '@platformatic/kafka';
import { SystemClock } from '../../core/clock.js';
import { pauseAfter } from '../kafka/catching-up.js';

const SYSTEM_CLOCK = new SystemClock();
/** How many times the metadata is read afresh for partitions it does not list, before the read fails. */
const FRESH_READS = 5;

type Callback = (error: Error | null, metadata?: ClusterMetadata) => void;

/** The partitions `consumer` is assigned, of the topics `metadata` was asked for, that it does not list. */
function unlisted(
  consumer: Consumer<Buffer, Buffer, Buffer, Buffer>,
  asked: readonly string[],
  metadata: ClusterMetadata,
) {
  const out: string[] = [];
  for (const { topic, partitions } of consumer.assignments ?? []) {
    if (!asked.includes(topic)) continue;
    const listed = metadata.topics.get(topic)?.partitions;
    for (const p of partitions) if (listed?.[p] === undefined) out.push(`${topic}[${p}]`);
  }
  return out;
}

/**
 * Makes `consumer`'s metadata list every partition it is assigned. Under the consumer protocol (KIP-848) the
 * broker assigns partitions added to a topic at a heartbeat, which can come before the client has read them in
 * its metadata (it reads it again only `metadataMaxAgeMs` after the last time): @platformatic/kafka 2.12.1's
 * messages stream then looks a new partition's leader up in metadata that does not list it, and throws
 * outside any callback (an uncaught TypeError: the process would die of it). Here a read from the cache that
 * leaves out an assigned partition is made again afresh, paced, a few times; should the broker still not list
 * it, the read fails, and so does the stream, which the consumer opens again.
 */
export function listingAssigned<C extends Consumer<Buffer, Buffer, Buffer, Buffer>>(consumer: C): C {
  const own = consumer.metadata.bind(consumer) as (options: MetadataOptions, callback: Callback) => void;
  const read = (options: MetadataOptions, callback: Callback, attempt = 0): void =>
    own(options, (error, metadata) => {
      if (error !== null || metadata === undefined) return callback(error, metadata);
      const missing = unlisted(consumer, options.topics ?? [], metadata);
      if (missing.length === 0) return callback(null, metadata);
      if (attempt >= FRESH_READS)
        return callback(
          new Error(
            `kafka: the consumer is assigned ${missing.join(', ')}, which the cluster's metadata does not list`,
          ),
        );
      const again = (): void => read({ ...options, forceUpdate: true }, callback, attempt + 1);
      if (attempt === 0) again();
      else void pauseAfter(attempt, SYSTEM_CLOCK).then(again);
    });
  const metadata = (options: MetadataOptions, callback?: Callback): Promise<ClusterMetadata> | undefined => {
    if (callback !== undefined) return void read(options, callback);
    return new Promise((resolve, reject) => read(options, (error, md) => (error ? reject(error) : resolve(md!))));
  };
  Object.defineProperty(consumer, 'metadata', { value: metadata, configurable: true, writable: true });
  return consumer;
}
