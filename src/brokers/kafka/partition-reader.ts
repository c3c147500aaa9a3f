import { randomBytes } from 'node:crypto';
import type { Admin, KafkaMessage, PartitionAssigner } from 'kafkajs';
import type { Logger } from '../../core/ports.js';
import { SESSION_CLOCK } from './batch-reader.js';
import { askAgain } from './catching-up.js';
import { AssignerProtocol, type Kafka } from './kafkajs.js';

/** What {@link readPartition} reads, and how. */
export interface PartitionRead {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly topic: string;
  readonly partition: number;
  /** The start of the name of the throw-away consumer group the read uses (a random suffix follows). */
  readonly groupPrefix: string;
  /**
   * When to stop: `'end'` at the partition's end as it is when the read begins (call it when no transaction
   * is open on the partition), or a predicate, asked after each message, true once the reader has all it needs.
   */
  readonly until: 'end' | ((message: KafkaMessage) => boolean);
  readonly log: Logger;
}

/**
 * Reads one partition from its start, committed messages only (`read_committed`: aborted transactions and
 * their markers are skipped), calling `visit` for each in offset order, until `read.until` says it is done.
 *
 * kafkajs reads only through a consumer group (it has no `assign`): the read joins a group of its own,
 * named for it alone, whose assigner gives its one member the one partition; it commits nothing, and the
 * group is deleted after (an empty group without offsets leaves nothing behind anyway).
 */
export async function readPartition(read: PartitionRead, visit: (message: KafkaMessage) => void): Promise<void> {
  const { admin, topic, partition } = read;
  let end = Number.POSITIVE_INFINITY;
  if (read.until === 'end') {
    const offsets = await askAgain(() => admin.fetchTopicOffsets(topic), SESSION_CLOCK);
    const at = offsets.find((o) => o.partition === partition);
    if (!at) throw new Error(`${topic} has no partition ${partition}`);
    end = Number(at.high);
    if (end <= Number(at.low)) return; // empty (or every record deleted)
  }
  const groupId = `${read.groupPrefix}.${randomBytes(6).toString('hex')}`;
  const consumer = read.kafka.consumer({
    groupId,
    partitionAssigners: [onePartition(topic, partition)],
    readUncommitted: false,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxBytes: 64 * 1024 * 1024,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
    retry: { retries: 5 },
  });
  let finish!: () => void;
  let fail!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  let finished = false;
  const until = read.until;
  // Batches that hold only markers or aborted messages never reach eachBatch, but do end a batch.
  consumer.on(consumer.events.END_BATCH_PROCESS, (event) => {
    if (!finished && Number(event.payload.lastOffset) >= end - 1) {
      finished = true;
      finish();
    }
  });
  consumer.on(consumer.events.CRASH, (event) => {
    if (!finished && !event.payload.restart) fail(event.payload.error);
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (finished || batch.partition !== partition) return;
        for (const message of batch.messages) {
          try {
            visit(message);
          } catch (error) {
            finished = true;
            fail(error);
            return;
          }
          if (until !== 'end' && until(message)) {
            finished = true;
            finish();
            return;
          }
        }
      },
    });
    await done;
  } finally {
    await consumer.disconnect().catch((error: unknown) => read.log.debug('reader not disconnected', { error }));
    await admin.deleteGroups([groupId]).catch(() => undefined); // only tidiness
  }
}

/** An assigner that gives every member (there is one) `partition` of `topic`. */
function onePartition(topic: string, partition: number): PartitionAssigner {
  return () => ({
    name: 'SluiceOnePartition',
    version: 0,
    async assign({ members }) {
      return members.map(({ memberId }) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: { [topic]: [partition] },
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: 'SluiceOnePartition',
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}
