import { randomBytes } from 'node:crypto';
import type { Admin, KafkaMessage, PartitionAssigner } from 'kafkajs';
import { isRetriable } from '../../../core/errors.js';
import type { Logger } from '../../../core/ports.js';
import { SESSION_CLOCK } from '../consumer/batch-reader.js';
import { askAgain } from '../catching-up.js';
import {
  AssignerProtocol,
  READ_COMMITTED,
  kafkajsInternals,
  type FetchedPartition,
  type Kafka,
  type KafkajsInternals,
} from '../kafkajs.js';

/** What {@link readPartition} reads, and how. */
export interface PartitionRead {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly topic: string;
  readonly partition: number;
  /**
   * The start of the name of the throw-away consumer group the read joins when it cannot read without one (a
   * random suffix follows).
   */
  readonly groupPrefix: string;
  /**
   * When to stop: `'end'` at the partition's end as it is when the read begins (call it when no transaction
   * is open on the partition), or a predicate, asked after each message, true once the reader has all it needs.
   */
  readonly until: 'end' | ((message: KafkaMessage) => boolean);
  /** Where the read begins, if after the partition's start. */
  readonly from?: number;
  readonly log: Logger;
}

/** Told each message read; returning false (and nothing else) ends the read there. */
export type Visit = (message: KafkaMessage) => unknown;

/**
 * Reads one partition from its start, committed messages only (`read_committed`: aborted transactions and
 * their markers are skipped), calling `visit` for each in offset order, until `read.until` says it is done.
 *
 * kafkajs's public API reads only through a consumer group (it has no `assign`), and a new group's first
 * join waits the broker's `group.initial.rebalance.delay.ms` (3 s by Kafka's default): so the read fetches
 * from the partition's leader itself, through kafkajs's own cluster (see {@link kafkajsInternals}), with no
 * group. With a kafkajs that lacks those internals, it joins a group of its own instead, named for it
 * alone, whose assigner gives its one member the one partition; it commits nothing, and the group is
 * deleted after (an empty group without offsets leaves nothing behind anyway).
 */
export async function readPartition(read: PartitionRead, visit: Visit): Promise<void> {
  const { admin, topic, partition } = read;
  const offsets = await askAgain(() => admin.fetchTopicOffsets(topic), SESSION_CLOCK);
  const at = offsets.find((o) => o.partition === partition);
  if (!at) throw new Error(`${topic} has no partition ${partition}`);
  const end = read.until === 'end' ? Number(at.high) : Number.POSITIVE_INFINITY;
  const start = Math.max(Number(at.low), read.from ?? 0);
  if (end <= start) return; // empty (or every record deleted), or nothing from `from` on
  const internals = kafkajsInternals(read.kafka);
  if (internals) return fetchPartition(read, internals, start, end, visit);
  return readInGroup(read, end, (m) => (Number(m.offset) < start ? undefined : visit(m)));
}

/** Fetches after a retriable failure (the leader moved, a connection dropped) this many times at most. */
const FETCH_ATTEMPTS = 6;

/**
 * The read without a group: Fetch requests to the partition's leader from `from` on (`read_committed`,
 * kafkajs's `Batch` dropping aborted messages and control records), until `end` or `read.until`. A fetch
 * that finds nothing yet (a transaction still open holds the last stable offset back) is made again, the
 * broker waiting up to 100 ms for data each time.
 */
async function fetchPartition(
  read: PartitionRead,
  internals: KafkajsInternals,
  from: number,
  end: number,
  visit: Visit,
): Promise<void> {
  const { topic, partition, until } = read;
  const cluster = internals.cluster();
  let offset = from;
  try {
    await cluster.connect();
    await cluster.addTargetTopic(topic);
    for (let failures = 0; offset < end;) {
      let fetched: FetchedPartition | undefined;
      try {
        const leader = Object.entries(cluster.findLeaderForPartitions(topic, [partition]))[0]?.[0];
        if (leader === undefined)
          throw Object.assign(new Error(`${topic} has no leader for partition ${partition}`), { retriable: true });
        const broker = await cluster.findBroker({ nodeId: leader });
        const response = await broker.fetch({
          replicaId: -1,
          isolationLevel: READ_COMMITTED,
          maxWaitTime: 100,
          minBytes: 1,
          maxBytes: 64 * 1024 * 1024,
          topics: [{ topic, partitions: [{ partition, fetchOffset: String(offset), maxBytes: 16 * 1024 * 1024 }] }],
        });
        fetched = response.responses
          .find((r) => r.topicName === topic)
          ?.partitions.find((p) => p.partition === partition);
        failures = 0;
      } catch (error) {
        const type = (error as { type?: unknown }).type;
        if (type === 'OFFSET_OUT_OF_RANGE') {
          // Deleted from under the read (a snapshot's delete): on from the partition's start, as a consumer resets.
          const offsets = await askAgain(() => read.admin.fetchTopicOffsets(topic), SESSION_CLOCK);
          const low = Number(offsets.find((o) => o.partition === partition)?.low);
          if (!(low > offset)) throw error; // not behind the start: past the end, which a read never goes
          offset = low;
          continue;
        }
        if (++failures >= FETCH_ATTEMPTS || !isRetriable(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** failures));
        await cluster.refreshMetadata().catch(() => undefined);
        continue;
      }
      if (fetched === undefined || fetched.messages.length === 0) continue; // nothing committed past `offset` yet
      const batch = internals.batch(topic, String(offset), fetched);
      for (const message of batch.messages) {
        if (visit(message) === false || (until !== 'end' && until(message))) return;
      }
      offset = Number(batch.lastOffset()) + 1;
    }
  } finally {
    await cluster.disconnect().catch((error: unknown) => read.log.debug('reader not disconnected', { error }));
  }
}

/** The read in a consumer group of its own (a kafkajs without the internals a fetch takes). */
async function readInGroup(read: PartitionRead, end: number, visit: Visit): Promise<void> {
  const { admin, topic, partition } = read;
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
          let stop: boolean;
          try {
            stop = visit(message) === false;
          } catch (error) {
            finished = true;
            fail(error);
            return;
          }
          if (stop || (until !== 'end' && until(message))) {
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
