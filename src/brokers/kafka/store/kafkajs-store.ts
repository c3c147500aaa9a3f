import type { Admin, KafkaConfig, LogEntry, Transaction } from 'kafkajs';
import { SluiceError } from '../../../core/errors.js';
import type { Logger, Store } from '../../../core/ports.js';
import { SESSION_CLOCK } from '../consumer/batch-reader.js';
import { askAgain, isCatchingUp } from '../catching-up.js';
import { Kafka, logLevel as KafkaLogLevel } from '../kafkajs.js';
import { logKafkajs } from '../kafkajs-log.js';
import { byTopic, errorTypeIn, isRefusal, publishError } from '../publish/publishing.js';
import { fencingProducer, isFenced } from '../transactional-producer.js';
import { KafkaStore, type KafkaStoreSettings } from './kafka-store.js';
import { readPartition } from './partition-reader.js';
import type { StoreClient, StoreTopic, StoreTransaction, StoreWriter } from './store-client.js';

/**
 * Settings of {@link kafkaStore}.
 *
 * @category Store
 */
export interface KafkaStoreOptions extends KafkaStoreSettings {
  /** The kafkajs client id. @default 'sluice-store' */
  clientId?: string;
  /** TLS settings, passed to kafkajs as they are. */
  ssl?: KafkaConfig['ssl'];
  /** SASL settings, passed to kafkajs as they are. */
  sasl?: KafkaConfig['sasl'];
  /** Anything else for the kafkajs client; merged over Sluice's settings. */
  kafkajs?: Partial<KafkaConfig>;
}

/**
 * A store kept in Kafka, for apps that span machines: shard n's records in partition n of the topic
 * `<prefix>.changelog` (retention unlimited: records are deleted only once a snapshot covers them), its
 * snapshot in partition n of the compacted `<prefix>.snapshots`, written by a transactional producer per
 * shard. `open()` creates the topics if they are missing and takes every shard: its producer's
 * `initTransactions` fences whoever had the shard before (their later appends reject with `STORE_FENCED`),
 * then it reads the snapshot and the records after it. With `ownership: 'partition'` (the default) shard p
 * goes with partition p of the paced subscriber's topic: the instance of the app that the consumer group
 * gives partition p opens shard p before it reads p, so several instances share the shards as they share
 * the partitions. Its client is kafkajs; `platformaticKafkaStore` (sluice/kafka/platformatic) is the same store
 * on @platformatic/kafka, on the same topics. The repository's `docs/store.md` tells its topics, settings and
 * guarantees.
 *
 * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` when a setting is invalid (naming it and its
 *   value).
 *
 * @example
 * ```ts
 * const store = kafkaStore({ brokers: ['kafka-1:9092'], shards: 8 }); // topics shop.reindex.changelog, …
 * const app = new App({ name: 'shop', store });
 * ```
 *
 * @category Store
 */
export function kafkaStore(options: KafkaStoreOptions): Store {
  return new KafkaStore('kafkaStore', options, (logger) => new KafkajsStoreClient(options, logger));
}

/** The store's client on kafkajs: its admin, a fencing producer per shard, reads by fetch (partition-reader.ts). */
class KafkajsStoreClient implements StoreClient {
  private readonly kafka: Kafka;
  /**
   * The admin client from `connect()` to `close()`: kafkajs's admin, disconnected and connected again, writes on
   * the connection it closed ("write after end").
   */
  private connected: Admin | undefined;

  constructor(
    options: KafkaStoreOptions,
    private readonly logger: () => Logger,
  ) {
    this.kafka = new Kafka({
      clientId: options.clientId ?? 'sluice-store',
      brokers: options.brokers,
      ssl: options.ssl,
      sasl: options.sasl,
      logLevel: KafkaLogLevel.WARN,
      logCreator: () => (entry: LogEntry) => logKafkajs(this.logger(), entry),
      ...options.kafkajs,
    });
  }

  async connect(): Promise<void> {
    this.connected ??= this.kafka.admin();
    await this.connected.connect();
  }

  private get admin(): Admin {
    if (this.connected === undefined) throw new SluiceError('APP_STATE', 'kafkaStore: not connected');
    return this.connected;
  }

  async createTopics(topics: readonly StoreTopic[]): Promise<void> {
    const create = {
      waitForLeaders: true,
      topics: topics.map((t) => ({
        topic: t.topic,
        numPartitions: t.partitions,
        replicationFactor: t.replicationFactor,
        configEntries: [...t.configs],
      })),
    };
    await askAgain(() => this.admin.createTopics(create), SESSION_CLOCK);
  }

  async partitionCounts(names: readonly string[], attempts: number): Promise<Map<string, number>> {
    const { topics } = await askAgain(
      () => this.admin.fetchTopicMetadata({ topics: [...names] }),
      SESSION_CLOCK,
      attempts,
    );
    return new Map(topics.map((t) => [t.name, t.partitions.length]));
  }

  async clusterId(): Promise<string> {
    return (await this.admin.describeCluster()).clusterId;
  }

  async deleteRecords(topic: string, partition: number, offset: number): Promise<void> {
    await this.admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(offset) }] });
  }

  async writer(transactionalId: string): Promise<StoreWriter> {
    const producer = await fencingProducer(this.kafka, transactionalId);
    return {
      transaction: async () => transactionOf(await producer.transaction()),
      close: () => producer.disconnect(),
    };
  }

  read(...[topic, partition, until, visit]: Parameters<StoreClient['read']>): Promise<void> {
    const groupPrefix = `${topic}.restore-${partition}`;
    return readPartition(
      { kafka: this.kafka, admin: this.admin, topic, partition, groupPrefix, until, log: this.logger() },
      visit,
    );
  }

  isFenced(error: unknown): boolean {
    return isFenced(error);
  }

  isCatchingUp(error: unknown): boolean {
    return isCatchingUp(error);
  }

  refusal(topics: string, error: unknown): SluiceError | undefined {
    return isRefusal(error) ? (publishError(topics, error) as SluiceError) : undefined;
  }

  isUnknownTopic(error: unknown): boolean {
    return errorTypeIn(error, (type) => type === 'UNKNOWN_TOPIC_OR_PARTITION') !== undefined;
  }

  async close(): Promise<void> {
    const admin = this.connected;
    this.connected = undefined;
    await admin?.disconnect();
  }
}

/** A kafkajs transaction as the store's log uses it. */
const transactionOf = (txn: Transaction): StoreTransaction => ({
  async send(topic, partition, messages) {
    const [meta] = await txn.send({ topic, messages: messages.map((m) => ({ ...m, partition })), acks: -1 });
    return Number(meta!.baseOffset);
  },
  async sendAlongside(alongside) {
    // Gathered by topic, in the records' order.
    const records = byTopic(alongside.flatMap((a) => a.messages));
    await txn.sendBatch({ topicMessages: [...records].map(([topic, messages]) => ({ topic, messages })), acks: -1 });
  },
  commit: () => txn.commit(),
  abort: () => txn.abort(),
});
