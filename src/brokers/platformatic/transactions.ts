import type { Admin, Producer, ProducerOptions } from '@platformatic/kafka';
import type { Logger, StagedMessage } from '../../core/ports.js';
import { PartitionTransactions, type PartitionWriters } from '../kafka/publish/partition-transactions.js';
import { pk } from './client.js';
import { committedOffsets } from './offsets.js';
import { bytes, messageOf, refusalOf } from './records.js';

type Bytes = Producer<Buffer, Buffer, Buffer, Buffer>;
export type Begun = Awaited<ReturnType<Bytes['beginTransaction']>>;

/** One input partition's transactional producer, and the transaction its fencing began (the first commit's). */
interface Writer {
  readonly producer: Bytes;
  begun: Begun | undefined;
}

/** What {@link platformaticTransactions} is made with (by `PlatformaticKafkaBroker.transactions`). */
export interface PlatformaticTransactionSettings {
  /** The client options every client of the broker shares: brokers, client ID, TLS, SASL. */
  readonly base: ProducerOptions<Buffer, Buffer, Buffer, Buffer>;
  /** The broker's admin client, once connected. */
  readonly admin: () => Admin;
  readonly group: string;
  readonly topic: string;
  /** Connects, and makes or checks an output topic (once per topic): before the first transaction to it. */
  readonly ready: (topic: string) => Promise<void>;
  readonly log: Logger;
}

/**
 * A transactional producer of `transactionalId`, and the transaction whose beginning fenced the ID's earlier
 * holders: begun with no producer ID of its own (KIP-360's −1), which a newer holder always gets, so the broker
 * ends their open transaction and refuses their later ones. A producer that fails to get there is closed.
 */
export async function fencingProducer(
  base: ProducerOptions<Buffer, Buffer, Buffer, Buffer>,
  transactionalId: string,
): Promise<{ producer: Bytes; begun: Begun | undefined }> {
  const producer: Bytes = new pk.Producer<Buffer, Buffer, Buffer, Buffer>({
    ...base,
    transactionalId,
    idempotent: true,
    partitioner: pk.compatibilityPartitioner,
    serializers: { key: bytes, value: bytes, headerKey: bytes, headerValue: bytes },
    // A transaction begun right after a commit is answered CONCURRENT_TRANSACTIONS until the commit's markers
    // are written, a few milliseconds: retried soon. A broker away is waited for, a second between tries, as
    // kafkajs's producer waits (PRODUCER_RETRY): whatever its outage, a shard's appends wait and then go on.
    retries: Number.MAX_SAFE_INTEGER,
    retryDelay: (_client, _operation, attempt) => Math.min(10 * 2 ** attempt, 1_000),
  });
  try {
    return { producer, begun: await producer.beginTransaction({ producerId: -1n, producerEpoch: -1 }) };
  } catch (error) {
    await producer.close().catch(() => {});
    throw error;
  }
}

/** The broker's answers that a newer producer of the same transactional ID took over: this one is fenced. */
const FENCED = ['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH'];

/** True when the client failed because a newer producer of the same transactional ID fenced this one. */
export const isFenced = (error: unknown): boolean =>
  FENCED.some((apiId) => pk.findErrorBy(error as Error, 'apiId', apiId) !== null);

/**
 * Exactly-once on @platformatic/kafka (see {@link PartitionTransactions}). A producer fences its earlier holders
 * when it begins its first transaction: InitProducerId with no producer ID of its own (KIP-360's −1), which a
 * newer holder always gets. That first transaction is kept open for the first commit. The group's offset goes in
 * with the group's ID only (generation −1, no member ID), as kafkajs's `sendOffsets` sends it: the fencing per
 * partition is what keeps a member that lost its partition from committing.
 */
export function platformaticTransactions(s: PlatformaticTransactionSettings): PartitionTransactions<Writer> {
  let coordinator: number | undefined;
  const coordinatorOf = async (): Promise<number> => {
    if (coordinator === undefined) {
      const [found] = await s.admin().findCoordinator({ keyType: pk.FindCoordinatorKeyTypes.GROUP, keys: [s.group] });
      coordinator = found!.nodeId;
    }
    return coordinator;
  };
  const writers: PartitionWriters<Writer> = {
    group: s.group,
    topic: s.topic,
    log: s.log,
    ready: s.ready,
    isFenced,
    refusal: refusalOf,
    fence: (partition) => fencingProducer(s.base, `sluice.eos.${s.group}.${s.topic}.${partition}`),
    letGo: (writer) =>
      writer.producer.close().catch((error: unknown) => s.log.debug('producer close failed', { error })),
    async commitOnce(writer, partition, offset, messages: readonly StagedMessage[]) {
      const transaction = writer.begun ?? (await writer.producer.beginTransaction());
      writer.begun = undefined;
      try {
        if (messages.length > 0)
          await transaction.send({ messages: messages.map((m) => messageOf(m.topic, m.value, m.options)) });
        // The client takes a consumer for its group's ID only, and an offset as the message before it.
        await transaction.addConsumer({ groupId: s.group } as never);
        const consumer = { groupId: s.group, generationId: -1, memberId: '', coordinatorId: await coordinatorOf() };
        await transaction.addOffset({
          topic: s.topic,
          partition,
          offset: BigInt(offset) - 1n,
          metadata: { consumer },
        } as never);
        await transaction.commit();
      } catch (error) {
        coordinator = undefined;
        if (!transaction.completed) await transaction.abort().catch(() => {});
        throw error;
      }
    },
    async committed(partition) {
      const offset = (await committedOffsets(s.admin(), s.group, s.topic)).get(partition) ?? -1;
      return offset >= 0 ? offset : 0;
    },
  };
  return new PartitionTransactions(writers);
}
