import type { Admin, MessageToProduce, Producer } from '@platformatic/kafka';
import { OncePerKey } from '../../core/once-per-key.js';
import { SluiceError, show } from '../../core/errors.js';
import { SystemClock } from '../../core/clock.js';
import { jsonLogger } from '../../core/logger.js';
import type { InboundMessage, PublishOptions } from '../../core/message.js';
import type {
  Broker,
  BrokerServer,
  Clock,
  ConsumeRequest,
  Consumer,
  InputTransactions,
  Logger,
} from '../../core/ports.js';
import { ASK_ATTEMPTS, partitionsReaching, pauseAfter } from '../kafka/catching-up.js';
import { consumerSettingsOf } from '../kafka/options.js';
import { PartitionBatches } from '../kafka/publish/partition-batches.js';
import { isLegalTopic } from '../kafka/publish/publishing.js';
import { PlatformaticConsumer } from './consumer.js';
import { pk } from './client.js';
import { bytes, isRefused, messageOf, refusalOf } from './records.js';
import { platformaticTransactions } from './transactions.js';
import { inboundOf } from './inbound.js';
import { readOnce } from './partition-read.js';
import type { PlatformaticKafkaBrokerOptions, PlatformaticSettings } from './settings.js';

/**
 * Apache Kafka through @platformatic/kafka (Node.js 22.22 or 24.6 and later): the same promises as
 * `KafkaBroker` (sluice/kafka) for publishing and consuming, with the consumer group protocol of KIP-848
 * available (`groupProtocol: 'consumer'`). Publishing uses one idempotent producer (acks from all in-sync
 * replicas, no duplicates on retries) with the Java-compatible murmur2 partitioner.
 *
 * Not on this client yet: the Kafka store (`kafkaStore`); use sluice/kafka for it. The repository's
 * `docs/kafka.md` compares the two clients.
 */
export class PlatformaticKafkaBroker implements Broker {
  /** `'kafka'`. */
  readonly kind = 'kafka';
  private producer: Producer<Buffer, Buffer, Buffer, Buffer> | undefined;
  private admin: Admin | undefined;
  private connecting: Promise<void> | undefined;
  private readonly consumers = new Set<PlatformaticConsumer>();
  private readonly known = new Set<string>();
  private readonly partitionCounts = new Map<string, number>();
  /** Publishes to one partition made in one turn, sent together (in one record batch, appended or refused whole). */
  private readonly batches = new PartitionBatches(
    (_topic, messages: MessageToProduce<Buffer, Buffer, Buffer, Buffer>[]) => this.producer!.send({ messages }),
    (topic) => this.partitionCounts.get(topic),
    {
      partitionOf: (key, count) => this.partitionOf(key, count),
      refused: isRefused,
    },
  );
  /** Per topic published to: its one check (see `checked`), which every publish to it awaits. */
  private readonly checks = new OncePerKey<string>();
  /** The broker's own waits (a topic being served) run in real time, whatever the app's clock. */
  private readonly systemClock = new SystemClock();
  private log: Logger;
  private clock: Clock = new SystemClock();
  private readonly settings: PlatformaticSettings;

  /**
   * Makes nothing yet (the app calls `connect` at `start()`).
   *
   * @throws TypeError when `brokers` lists no server.
   * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` for a bad `groupProtocol` or `metadataMaxAgeMs`.
   */
  constructor(private readonly options: PlatformaticKafkaBrokerOptions) {
    if (!Array.isArray(options?.brokers) || options.brokers.length === 0)
      throw new TypeError('PlatformaticKafkaBroker: brokers must list at least one host:port');
    const protocol = options.groupProtocol ?? 'classic';
    if (protocol !== 'classic' && protocol !== 'consumer')
      throw new SluiceError(
        'CONFIG_INVALID',
        `PlatformaticKafkaBroker: groupProtocol must be 'classic' or 'consumer', got ${show(protocol)}`,
      );
    this.log = (options.logger ?? jsonLogger()).child({ broker: 'kafka' });
    this.settings = {
      ...consumerSettingsOf(options),
      clientId: options.clientId ?? 'sluice',
      bootstrapBrokers: options.brokers,
      groupProtocol: protocol,
      platformatic: options.platformatic,
    };
  }

  /** Its bootstrap addresses, comma-separated, and protocol `kafka`. */
  server(): BrokerServer {
    return { host: this.options.brokers.join(','), protocol: 'kafka' };
  }

  connect(app?: { readonly logger: Logger; readonly clock: Clock }): Promise<void> {
    if (app !== undefined) {
      if (this.options.logger === undefined) this.log = app.logger.child({ broker: 'kafka' });
      this.clock = app.clock;
    }
    this.connecting ??= this.connectClients();
    return this.connecting;
  }

  /** The options every client of the broker shares: brokers, client ID, TLS, SASL. */
  private get base() {
    return {
      clientId: this.settings.clientId,
      bootstrapBrokers: this.settings.bootstrapBrokers,
      metadataMaxAge: this.settings.metadataMaxAgeMs,
      ...(this.options.platformatic?.tls !== undefined && { tls: this.options.platformatic.tls }),
      ...(this.options.platformatic?.sasl !== undefined && { sasl: this.options.platformatic.sasl }),
    };
  }

  private async connectClients(): Promise<void> {
    const base = this.base;
    this.producer = new pk.Producer<Buffer, Buffer, Buffer, Buffer>({
      ...base,
      idempotent: true,
      partitioner: pk.compatibilityPartitioner,
      serializers: { key: bytes, value: bytes, headerKey: bytes, headerValue: bytes },
    });
    this.admin = new pk.Admin(base);
    try {
      await this.admin.metadata({ topics: [] });
    } catch (error) {
      this.connecting = undefined;
      await this.closeClients();
      throw error;
    }
  }

  /**
   * Publishes one message, as `KafkaBroker.publish` does. Resolves once the in-sync replicas have it. Publishes
   * made in one turn of the event loop to one partition are sent in one request, as one record batch (see
   * `PartitionBatches`); those made one after another without waiting go out in the order they were made.
   *
   * @throws {@link sluice!SluiceError | SluiceError} (as a rejection) `PUBLISH_REFUSED` when the broker refuses
   *   the message for good, `TOPIC_MISSING` for a topic the broker does not have, `CONFIG_INVALID` for a pinned
   *   `partition` the topic does not have (asked of the broker again for 0.7 s first: a partition just added is
   *   sent to once the producer's metadata lists it).
   */
  async publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    await this.checked(topic);
    const partition = options?.partition;
    if (partition !== undefined) {
      // The client sends a message pinned to a partition its metadata does not list to another one (the partition
      // modulo the count it knows): the producer's own metadata is asked, afresh while it lists too few.
      const known = (fresh: boolean) => this.producerPartitions(topic, fresh);
      const count = await partitionsReaching(partition, known, this.systemClock);
      if (!Number.isInteger(partition) || partition < 0 || partition >= count)
        throw new SluiceError(
          'CONFIG_INVALID',
          `kafka: publish to "${topic}": partition must be an integer from 0 to ${count - 1}, got ${show(partition)}`,
        );
    }
    try {
      await this.batches.publish(topic, messageOf(topic, value, options));
    } catch (error) {
      throw refusalOf(topic, error) ?? error;
    }
  }

  /**
   * Connects, creates the topic where `createTopics` allows, refuses one the broker does not have, and waits
   * until the producer's metadata knows it (a topic just created is served a moment later): once per topic,
   * the promise kept; a failure is forgotten, so that a later publish asks again.
   */
  private checked(topic: string): Promise<void> {
    return this.checks.get(topic, async () => {
      await this.connect();
      await this.ensureTopic(topic);
      // A name no topic can have is left to the broker, which refuses it for good.
      if (!isLegalTopic(topic)) return;
      await this.mustExist(topic, '(publishing)');
      for (let attempt = 1; ; attempt++) {
        try {
          const metadata = await this.producer!.metadata({ topics: [topic], forceUpdate: true });
          const count = metadata.topics.get(topic)?.partitionsCount;
          if (count !== undefined) this.partitionCounts.set(topic, count);
          return;
        } catch (error) {
          if (attempt >= ASK_ATTEMPTS) throw error;
          await pauseAfter(attempt, this.systemClock);
        }
      }
    });
  }

  async consume(request: ConsumeRequest): Promise<Consumer> {
    await this.connect();
    await this.ensureTopic(request.topic);
    await this.mustExist(request.topic, `(group "${request.group}")`);
    const consumer = new PlatformaticConsumer(
      this.admin!,
      request,
      this.settings,
      this.log.child({ group: request.group, topic: request.topic }),
      this.clock,
    );
    this.consumers.add(consumer);
    await consumer.start(await this.countPartitions(request.topic));
    return consumer;
  }

  /**
   * The transactions of `group` over `topic`'s partitions, for an `exactlyOnce` subscriber: a transactional
   * producer per input partition, fenced per partition, as `KafkaBroker.transactions` has them
   * (docs/publishing.md). The app opens a partition before it reads it and releases it when it goes.
   */
  transactions(group: string, topic: string): InputTransactions {
    return platformaticTransactions({
      base: this.base,
      admin: () => this.admin!,
      group,
      topic,
      ready: (t) => this.checked(t),
      log: this.log.child({ group, topic }),
    });
  }

  /** The partition a message with `key` lands in: murmur2 over its bytes (a string's UTF-8), as Java hashes it. */
  partitionOf(key: string | Buffer, partitions: number): number {
    return (pk.murmur2(typeof key === 'string' ? Buffer.from(key, 'utf8') : key) & 0x7fffffff) % partitions;
  }

  /** How many partitions `topic` has, as the broker tells; 0 when it has none such. */
  async partitionCount(topic: string): Promise<number> {
    await this.connect();
    if (!(await this.admin!.listTopics()).includes(topic)) return 0;
    return this.countPartitions(topic);
  }

  /** How many partitions the producer's metadata lists for `topic` (asked of the broker when `fresh`). */
  private async producerPartitions(topic: string, fresh: boolean): Promise<number> {
    const metadata = await this.producer!.metadata({ topics: [topic], forceUpdate: fresh });
    return metadata.topics.get(topic)?.partitionsCount ?? 0;
  }

  private async countPartitions(topic: string): Promise<number> {
    const metadata = await this.admin!.metadata({ topics: [topic], forceUpdate: !this.partitionCounts.has(topic) });
    const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
    this.partitionCounts.set(topic, count);
    return count;
  }

  /** See {@link Broker.readTopic}: fetched from the partition's leader, with no consumer group. */
  async readTopic(
    topic: string,
    partition: number,
    from: number,
    visit: (message: InboundMessage) => boolean,
  ): Promise<void> {
    if ((await this.partitionCount(topic)) <= partition) return;
    const read = { admin: this.admin!, topic, partition, until: 'end' as const, from };
    await readOnce(
      this.base,
      `${topic}.read-${partition}`,
      read,
      (m) => visit(inboundOf(topic, partition, m)),
      this.log,
    );
  }

  /** The cluster's ID, as the broker tells. */
  async clusterId(): Promise<string> {
    await this.connect();
    return (await this.admin!.metadata({ topics: [] })).id;
  }

  /** Creates a topic with `partitions` partitions (connecting first if need be); an existing topic is left as it is. */
  async createTopic(name: string, partitions: number, replicationFactor = 1): Promise<void> {
    await this.connect();
    try {
      await this.admin!.createTopics({ topics: [name], partitions, replicas: replicationFactor });
    } catch (error) {
      if (pk.findErrorBy(error as Error, 'apiId', 'TOPIC_ALREADY_EXISTS') === null) throw error;
    }
    this.known.add(name);
  }

  /** Closes every consumer it started (each commits and leaves its group), then the producer and the admin client. */
  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.close()));
    this.consumers.clear();
    this.checks.clear(); // a publish after close connects again
    if (this.connecting) {
      await this.connecting.catch(() => {});
      await this.closeClients();
      this.connecting = undefined;
    }
  }

  private async closeClients(): Promise<void> {
    await Promise.allSettled([this.producer?.close(), this.admin?.close()]);
  }

  private async mustExist(topic: string, what: string): Promise<void> {
    if (this.known.has(topic)) return;
    for (let attempt = 1; ; attempt++) {
      if ((await this.admin!.listTopics()).includes(topic)) break;
      if (attempt === 5)
        throw new SluiceError(
          'TOPIC_MISSING',
          `PlatformaticKafkaBroker: topic "${topic}" ${what} does not exist; create it first (broker.createTopic(name, partitions), or the createTopics option: { partitions: n })`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
    this.known.add(topic);
  }

  private async ensureTopic(topic: string): Promise<void> {
    const create = this.options.createTopics;
    if (!create || this.known.has(topic)) return;
    await this.createTopic(topic, create.partitions, create.replicationFactor);
  }
}
