import type { Admin, BaseOptions } from '@platformatic/kafka';
import { SluiceError } from '../../core/errors.js';
import { SystemClock } from '../../core/clock.js';
import type { Logger, Store } from '../../core/ports.js';
import { CATCHING_UP, pauseAfter } from '../kafka/catching-up.js';
import { KafkaStore, type KafkaStoreSettings } from '../kafka/store/kafka-store.js';
import type {
  ReadUntil,
  StoreClient,
  StoredMessage,
  StoreTopic,
  StoreTransaction,
  StoreWriter,
} from '../kafka/store/store-client.js';
import { pk } from './client.js';
import { readOnce } from './partition-read.js';
import { messageOf, refusalOf } from './records.js';
import { fencingProducer, isFenced, type Begun } from './transactions.js';

/**
 * Settings of {@link platformaticKafkaStore}: those of `kafkaStore` that are not kafkajs's.
 *
 * @category Store
 */
export interface PlatformaticKafkaStoreOptions extends KafkaStoreSettings {
  /** The client id. @default 'sluice-store' */
  clientId?: string;
  /** TLS and SASL settings for @platformatic/kafka's clients, passed as they are. */
  platformatic?: Partial<Pick<BaseOptions, 'tls' | 'sasl'>>;
}

/**
 * The Kafka store of `kafkaStore` (sluice/kafka) on @platformatic/kafka: the same topics, records, snapshots,
 * fencing and guarantees, so that an app moves from one client to the other on the data it has. The
 * repository's `docs/store.md` tells its topics, settings and guarantees, `docs/kafka.md` which client to choose.
 *
 * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` when a setting is invalid (naming it and its
 *   value).
 *
 * @example
 * ```ts
 * import { PlatformaticKafkaBroker, platformaticKafkaStore } from 'sluice/kafka/platformatic';
 *
 * const store = platformaticKafkaStore({ brokers: ['kafka-1:9092'], shards: 8 });
 * const app = new App({ name: 'shop', store });
 * ```
 *
 * @category Store
 */
export function platformaticKafkaStore(options: PlatformaticKafkaStoreOptions): Store {
  return new KafkaStore('platformaticKafkaStore', options, (logger) => new PlatformaticStoreClient(options, logger));
}

const isCatchingUp = (error: unknown): boolean =>
  [...CATCHING_UP].some((apiId) => pk.findErrorBy(error as Error, 'apiId', apiId) !== null);

/** The store's client on @platformatic/kafka: an admin, a fencing producer per shard, reads by fetch. */
class PlatformaticStoreClient implements StoreClient {
  private readonly base: BaseOptions;
  /** The admin client from `connect()` to `close()`: a closed client of @platformatic/kafka does not open again. */
  private connected: Admin | undefined;
  private readonly clock = new SystemClock();

  constructor(
    options: PlatformaticKafkaStoreOptions,
    private readonly logger: () => Logger,
  ) {
    this.base = {
      clientId: options.clientId ?? 'sluice-store',
      bootstrapBrokers: options.brokers,
      ...(options.platformatic?.tls !== undefined && { tls: options.platformatic.tls }),
      ...(options.platformatic?.sasl !== undefined && { sasl: options.platformatic.sasl }),
    };
  }

  async connect(): Promise<void> {
    this.connected ??= new pk.Admin(this.base);
    await this.connected.metadata({ topics: [] });
  }

  private get admin(): Admin {
    if (this.connected === undefined) throw new SluiceError('APP_STATE', 'platformaticKafkaStore: not connected');
    return this.connected;
  }

  async createTopics(topics: readonly StoreTopic[]): Promise<void> {
    await Promise.all(
      topics.map(async (t) => {
        try {
          await this.admin.createTopics({
            topics: [t.topic],
            partitions: t.partitions,
            replicas: t.replicationFactor,
            configs: t.configs.map((c) => ({ name: c.name, value: c.value })),
          });
        } catch (error) {
          if (pk.findErrorBy(error as Error, 'apiId', 'TOPIC_ALREADY_EXISTS') === null) throw error;
        }
      }),
    );
  }

  /** Asks the metadata afresh until every topic is there with a leader for each partition. */
  async partitionCounts(names: readonly string[], attempts: number): Promise<Map<string, number>> {
    for (let attempt = 1; ; attempt++) {
      let missing: string[];
      try {
        const metadata = await this.admin.metadata({ topics: [...names], forceUpdate: true });
        const counts = new Map<string, number>();
        missing = [];
        for (const name of names) {
          const topic = metadata.topics.get(name);
          if (topic === undefined || topic.partitions.some((p) => p === undefined || p.leader < 0)) missing.push(name);
          else counts.set(name, topic.partitionsCount);
        }
        if (missing.length === 0) return counts;
      } catch (error) {
        if (!isCatchingUp(error) || attempt >= attempts) throw error;
        missing = [...names];
      }
      if (attempt >= attempts)
        throw Object.assign(new Error(`no leader yet for a partition of ${missing.join(', ')}`), {
          apiId: 'LEADER_NOT_AVAILABLE',
        });
      await pauseAfter(attempt, this.clock);
    }
  }

  async clusterId(): Promise<string> {
    return (await this.admin.metadata({ topics: [] })).id;
  }

  async deleteRecords(topic: string, partition: number, offset: number): Promise<void> {
    await this.admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition, offset: BigInt(offset) }] }] });
  }

  /**
   * A producer of `transactionalId` fences its earlier holders when it begins its first transaction (InitProducerId
   * with no producer ID of its own, which a newer holder always gets): that transaction is begun here and kept
   * for the first `transaction()`. The client goes on counting a partition's sequence numbers past a send the
   * broker refused inside a transaction, which the broker then answers OUT_OF_ORDER_SEQUENCE_NUMBER: after an
   * abort the writer starts a producer afresh (fencing the one before, its own), which begins at sequence 0.
   */
  async writer(transactionalId: string): Promise<StoreWriter> {
    let current = await fencingProducer(this.base, transactionalId);
    let aborted = false;
    return {
      transaction: async () => {
        if (aborted) {
          await current.producer.close().catch(() => {});
          current = await fencingProducer(this.base, transactionalId);
          aborted = false;
        }
        const txn = current.begun ?? (await current.producer.beginTransaction());
        current.begun = undefined;
        return transactionOf(txn, () => (aborted = true));
      },
      close: () => current.producer.close(),
    };
  }

  read(topic: string, partition: number, until: ReadUntil, visit: (m: StoredMessage) => void): Promise<void> {
    const read = { admin: this.admin, topic, partition, until };
    return readOnce(this.base, `${topic}.restore-${partition}`, read, visit, this.logger());
  }

  isFenced(error: unknown): boolean {
    return isFenced(error);
  }

  isCatchingUp(error: unknown): boolean {
    return isCatchingUp(error) || (error as { apiId?: unknown } | undefined)?.apiId === 'LEADER_NOT_AVAILABLE';
  }

  refusal(topics: string, error: unknown): SluiceError | undefined {
    return refusalOf(topics, error);
  }

  isUnknownTopic(error: unknown): boolean {
    return pk.findErrorBy(error as Error, 'apiId', 'UNKNOWN_TOPIC_OR_PARTITION') !== null;
  }

  async close(): Promise<void> {
    const admin = this.connected;
    this.connected = undefined;
    await admin?.close();
  }
}

/** A @platformatic/kafka transaction as the store's log uses it; `onAbort` is told once it is aborted. */
const transactionOf = (txn: Begun, onAbort: () => void): StoreTransaction => ({
  async send(topic, partition, messages) {
    const sent = await txn.send({
      messages: messages.map((m) => ({
        topic,
        partition,
        key: m.key === null ? undefined : Buffer.from(m.key),
        value: m.value ?? undefined,
      })),
    });
    const at = sent.offsets?.find((o) => o.topic === topic && o.partition === partition);
    if (at === undefined) throw new Error(`kafka store: the broker gave no offset for ${topic}[${partition}]`);
    return Number(at.offset);
  },
  async sendAlongside(alongside) {
    await txn.send({
      messages: alongside.flatMap((a) => a.messages.map((m) => messageOf(m.topic, m.value, m.options))),
    });
  },
  commit: () => txn.commit(),
  async abort() {
    onAbort();
    await txn.abort();
  },
});
