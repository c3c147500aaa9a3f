import type { Admin, Consumer, ConsumerOptions, RecordsBatch } from '@platformatic/kafka';
import type { Logger } from '../../core/ports.js';
import type { ReadUntil, StoredMessage } from '../kafka/store/store-client.js';
import { SystemClock } from '../../core/clock.js';
import { pauseAfter } from '../kafka/catching-up.js';
import { pk } from './client.js';
import { CONTROL, readCommitted } from './committed-fetch.js';

/** What {@link readPartition} reads, and with what. */
export interface PartitionRead {
  /** The admin client, for the partition's start and end. */
  readonly admin: Admin;
  /** A consumer of this read alone (its fetch session is the read's), made with `readCommitted`; closed after. */
  readonly consumer: Consumer<Buffer, Buffer, Buffer, Buffer>;
  readonly topic: string;
  readonly partition: number;
  readonly until: ReadUntil;
  /** Where the read begins, if after the partition's start. */
  readonly from?: number;
}

/** A client's settings (brokers, client ID, TLS, SASL), as a consumer of a read takes them. */
type ClientBase = Omit<ConsumerOptions<Buffer, Buffer, Buffer, Buffer>, 'groupId'>;

/**
 * {@link readPartition} with a consumer of its own, made from `base` (its group, `groupId`, joined by no one:
 * the read fetches without a group) and closed after.
 */
export async function readOnce(
  base: ClientBase,
  groupId: string,
  read: Omit<PartitionRead, 'consumer'>,
  visit: (message: StoredMessage) => unknown,
  log: Logger,
): Promise<void> {
  const consumer = readCommitted(
    new pk.Consumer<Buffer, Buffer, Buffer, Buffer>({
      ...base,
      groupId,
      retries: 6,
      retryDelay: (_client, _operation, attempt) => Math.min(100 * 2 ** attempt, 2_000),
    }),
  );
  try {
    await readPartition({ ...read, consumer }, visit);
  } finally {
    await consumer.close().catch((error: unknown) => log.debug('reader not closed', { error }));
  }
}

/** The most bytes one fetch asks for, and for the one partition in it. */
const FETCH_BYTES = 64 * 1024 * 1024;
const PARTITION_BYTES = 16 * 1024 * 1024;

/**
 * Reads one partition from its start, committed messages only, calling `visit` for each in offset order, until
 * `read.until` says it is done (see `StoreClient.read`). Fetch requests go to the partition's leader through
 * the consumer's `fetch`, with no group: a new group's first join would wait the broker's
 * `group.initial.rebalance.delay.ms`. A fetch that finds nothing yet (a transaction still open holds the last
 * stable offset back) is made again, the broker waiting up to 100 ms for data each time.
 */
export async function readPartition(read: PartitionRead, visit: (message: StoredMessage) => unknown): Promise<void> {
  const { topic, partition, until } = read;
  const { low, high } = await bounds(read.admin, topic, partition);
  const end = until === 'end' ? high : Number.POSITIVE_INFINITY;
  let offset = BigInt(Math.max(low, read.from ?? 0));
  for (let leaderless = 0; offset < end;) {
    let answer: readonly RecordsBatch[] | 'no leader';
    try {
      answer = await fetchOnce(read, offset);
    } catch (error) {
      if (pk.findErrorBy(error as Error, 'apiId', 'OFFSET_OUT_OF_RANGE') === null) throw error;
      // Deleted from under the read (a snapshot's delete): on from the partition's start, as a consumer resets.
      const start = BigInt((await bounds(read.admin, topic, partition)).low);
      if (!(start > offset)) throw error; // not behind the start: past the end, which a read never goes
      offset = start;
      continue;
    }
    if (answer === 'no leader') {
      // The partition's leader moving (a broker restarting): asked again, a little later each time, for a while.
      if (++leaderless >= NO_LEADER_ATTEMPTS) throw new Error(`${topic}[${partition}] has no leader`);
      await pauseAfter(leaderless, SYSTEM_CLOCK);
      continue;
    }
    leaderless = 0;
    const next = committedOf(answer, offset, (message) => {
      return visit(message) === false || (until !== 'end' && until(message));
    });
    if (next === 'done') return;
    offset = next;
  }
}

/** The partition's start, and its end as a `read_committed` reader sees it (the last stable offset). */
async function bounds(admin: Admin, topic: string, partition: number): Promise<{ low: number; high: number }> {
  const ask = async (timestamp: bigint): Promise<number> => {
    const [answer] = await admin.listOffsets({
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp }] }],
      isolationLevel: pk.FetchIsolationLevels.READ_COMMITTED,
    });
    const found = answer?.partitions.find((p) => p.partitionIndex === partition);
    if (found === undefined) throw new Error(`${topic} has no partition ${partition}`);
    return Number(found.offset);
  };
  const [low, high] = await Promise.all([ask(pk.ListOffsetTimestamps.EARLIEST), ask(pk.ListOffsetTimestamps.LATEST)]);
  return { low, high };
}

/** How many times in a row a read finds its partition without a leader before it fails (about 20 s in all). */
const NO_LEADER_ATTEMPTS = 25;
const SYSTEM_CLOCK = new SystemClock();

/** One fetch from `offset`, `read_committed`, at the partition's leader; 'no leader' while it has none known. */
async function fetchOnce(read: PartitionRead, offset: bigint): Promise<readonly RecordsBatch[] | 'no leader'> {
  const { consumer, topic, partition } = read;
  const metadata = await consumer.metadata({ topics: [topic] });
  const t = metadata.topics.get(topic);
  const leader = t?.partitions[partition]?.leader;
  if (t === undefined || leader === undefined || leader < 0) {
    await consumer.metadata({ topics: [topic], forceUpdate: true });
    return 'no leader'; // asked again, with the metadata read afresh
  }
  const response = await consumer.fetch({
    node: leader,
    isolationLevel: pk.FetchIsolationLevels.READ_COMMITTED,
    maxWaitTime: 100,
    minBytes: 1,
    maxBytes: FETCH_BYTES,
    topics: [
      {
        topicId: t.id,
        partitions: [
          {
            partition,
            fetchOffset: offset,
            partitionMaxBytes: PARTITION_BYTES,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
          },
        ],
      },
    ],
  });
  const answered = response.responses
    .find((r) => r.topicId === t.id)
    ?.partitions.find((p) => p.partitionIndex === partition);
  if (answered === undefined) return [];
  if (answered.errorCode !== 0)
    throw Object.assign(
      new Error(`fetch of ${topic}[${partition}] at ${offset} answered error code ${answered.errorCode}`),
      {
        ...(answered.errorCode === OFFSET_OUT_OF_RANGE && { apiId: 'OFFSET_OUT_OF_RANGE' }),
      },
    );
  return answered.records ?? [];
}

/** Kafka's error code for a fetch offset outside the partition. */
const OFFSET_OUT_OF_RANGE = 1;

/**
 * Visits the records of one fetch's `batches` at `from` or later, in order, until `visit` answers true ('done');
 * else answers the offset past the last batch, where the next fetch begins (`from` when there were none). The
 * batches come from a consumer made with `readCommitted`: those of aborted transactions are empty, and markers
 * (control batches) carry no record of the log's.
 */
export function committedOf(
  batches: readonly RecordsBatch[],
  from: bigint,
  visit: (message: StoredMessage) => boolean,
): bigint | 'done' {
  let next = from;
  for (const batch of batches) {
    const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
    if (last + 1n > next) next = last + 1n;
    if (batch.attributes & CONTROL) continue;
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < from) continue; // a batch begun before the offset asked for
      const timestamp = batch.firstTimestamp + record.timestampDelta;
      const message = {
        offset: String(offset),
        key: record.key,
        value: record.value,
        recordHeaders: record.headers,
        appendedAt: timestamp,
      };
      if (visit(message)) return 'done';
    }
  }
  return next;
}
