import type { Admin, LogEntry, Producer } from 'kafkajs';
import { Kafka, Partitioners, logLevel as KafkaLogLevel } from './kafkajs.js';
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
import { SESSION_CLOCK } from './consumer/batch-reader.js';
import { askAgain, partitionsReaching, pauseAfter } from './catching-up.js';
import { KafkaConsumer } from './consumer/kafka-consumer.js';
import { logKafkajs } from './kafkajs-log.js';
import { consumerSettingsOf, type KafkaBrokerOptions, type KafkaConsumerSettings } from './options.js';
import { PublishBatches, keyPartition } from './publish/publish-batches.js';
import { isLegalTopic, publishError, recordOf } from './publish/publishing.js';
import { kafkajsTransactions } from './publish/input-transactions.js';
import { KafkaInbound } from './convert.js';
import { readPartition } from './store/partition-reader.js';

/**
 * Apache Kafka through kafkajs: one kafkajs consumer per subscriber (each made by a kafkajs client of
 * its own, in the subscriber's group), eachBatch with manual offsets, commits of finished work only
 * (per-partition watermarks), back-pressure by holding batches. Publishing uses one producer (acks from
 * all in-sync replicas) with the Java-compatible murmur2 partitioner, so a key lands where Java clients
 * put it; publishes to one partition (pinned, or by their keys' hash) made in one turn go in one request. The
 * repository's `docs/kafka.md` tells how it reads, commits, rebalances and recovers.
 *
 * @example
 * ```ts
 * const kafka = new KafkaBroker({ brokers: ['127.0.0.1:9092'], createTopics: { partitions: 6 } });
 * const app = new App({ name: 'billing' }).withBroker(kafka, (b) => b.include(Billing));
 * await app.run();
 * ```
 */
export class KafkaBroker implements Broker {
  /** `'kafka'`. */
  readonly kind = 'kafka';

  /** Its bootstrap addresses, comma-separated, and protocol `kafka`. */
  server(): BrokerServer {
    return { host: this.options.brokers.join(','), protocol: 'kafka' };
  }
  /** The kafkajs client the producer and the admin client share, made with this broker's settings. */
  readonly kafka: Kafka;
  private producer: Producer | undefined;
  private admin: Admin | undefined;
  private connecting: Promise<void> | undefined;
  private readonly consumers = new Set<KafkaConsumer>();
  private readonly known = new Set<string>();
  /** Per topic published to: its one check (see `checked`), which every publish to it awaits. */
  private readonly checks = new OncePerKey<string>();
  private log: Logger;
  /** The clock of the consumers' own timers: the app's, once an app has connected this broker. */
  private clock: Clock = new SystemClock();
  private readonly consumerSettings: KafkaConsumerSettings;
  /** The partition count of each topic published to, as told when its first publish checked it. */
  private readonly partitionCounts = new Map<string, number>();
  /** Publishes to one partition made in one turn, sent together. */
  private readonly batches = new PublishBatches(
    (topic, messages) => this.producer!.send({ topic, messages }),
    (topic) => this.partitionCounts.get(topic),
  );

  /**
   * Makes the kafkajs client; connects nothing (the app calls `connect` at `start()`).
   *
   * @throws TypeError when `brokers` lists no server.
   * @throws {@link sluice!SluiceError | SluiceError} `CONFIG_INVALID` when `metadataMaxAgeMs` is not a positive
   *   integer.
   */
  constructor(private readonly options: KafkaBrokerOptions) {
    if (!Array.isArray(options?.brokers) || options.brokers.length === 0)
      throw new TypeError('KafkaBroker: brokers must list at least one host:port');
    this.log = (options.logger ?? jsonLogger()).child({ broker: 'kafka' });
    this.consumerSettings = consumerSettingsOf(options);
    this.kafka = this.createKafka();
  }

  /**
   * Makes a kafkajs client with this broker's settings. The producer and admin client share one; each consumer
   * gets one of its own: kafkajs keeps a table of committed offsets per group for all the consumers of one
   * client, and each consumer's join resets it to that consumer's topics, so two subscribers of one app (one
   * group, two topics) would wipe each other's entries and crash the other's next fetch.
   */
  createKafka(): Kafka {
    const options = this.options;
    return new Kafka({
      clientId: options.clientId ?? 'sluice',
      brokers: options.brokers,
      ssl: options.ssl,
      sasl: options.sasl,
      logLevel: KafkaLogLevel.WARN,
      logCreator: () => (entry: LogEntry) => logKafkajs(this.log, entry),
      ...options.kafkajs,
    });
  }

  /**
   * Connects the producer and the admin client. A failed connect is forgotten: the next call tries again.
   * The app passes its logger (used unless the `logger` option gave one) and its clock, which the
   * consumers started from then on run their commit interval, crash restarts and close deadline on.
   */
  connect(app?: { readonly logger: Logger; readonly clock: Clock }): Promise<void> {
    if (app !== undefined) {
      if (this.options.logger === undefined) this.log = app.logger.child({ broker: 'kafka' });
      this.clock = app.clock;
    }
    this.connecting ??= this.connectClients();
    return this.connecting;
  }

  private async connectClients(): Promise<void> {
    const producer = this.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      metadataMaxAge: this.consumerSettings.metadataMaxAgeMs,
    });
    const admin = this.kafka.admin();
    this.producer = producer;
    this.admin = admin;
    try {
      await Promise.all([producer.connect(), admin.connect()]);
    } catch (error) {
      this.connecting = undefined;
      await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
      throw error;
    }
  }

  /**
   * Publishes one message (connecting first if need be): a `Uint8Array` as it is, a string as UTF-8
   * text, anything else as JSON; `{ tombstone: true }` sends a null value. Keys and header values may be
   * strings or bytes; a header given an array of values is sent once per value. Resolves once the
   * in-sync replicas have it. Publishes made in one turn of the event loop to one partition (pinned, by
   * their keys' hash, or unkeyed: a turn's stick to one partition) are sent in one request (see
   * `PublishBatches`). Publishes made one after another without
   * waiting go out in the order they were made, those to a topic not published to before included.
   *
   * @throws {@link sluice!SluiceError | SluiceError} (as a rejection) `PUBLISH_REFUSED` when the broker refuses the
   *   message
   *   itself (`MESSAGE_TOO_LARGE`, `RECORD_LIST_TOO_LARGE`, `INVALID_RECORD`, `INVALID_TIMESTAMP`) or the
   *   topic name (`INVALID_TOPIC_EXCEPTION`); `TOPIC_MISSING` for a topic the broker does not have (asked
   *   once per topic, naming it); `CONFIG_INVALID` for a pinned `partition` the topic does not
   *   have (the broker asked again for 0.7 s first). A partition just added that the producer does not know
   *   yet rejects with a plain, retriable error; other errors are kafkajs's own.
   */
  async publish(topic: string, value: unknown, options?: PublishOptions): Promise<void> {
    await this.checked(topic);
    const partition = options?.partition;
    const sent = await this.batches.publish(topic, recordOf(value, options)).catch((error: unknown) => {
      throw publishError(topic, error);
    });
    // kafkajs sends nothing, and reports no error, for a pinned partition its metadata does not list.
    if (partition !== undefined && !sent.some((r) => r.partition === partition))
      await this.unknownPartition(topic, partition);
  }

  /**
   * Connects, creates the topic where `createTopics` allows, and refuses one the broker does not have: once
   * per topic, the promise kept (a failure is forgotten, so that a later publish asks again). Every publish
   * awaits its topic's one promise, so that publishes made together reach the batches in the order they were
   * made: each awaiting a check of its own, the first publishes to a topic could overtake one another (two
   * `app.send`s of one event ID, routed, would reach the key's owner in the other order).
   */
  private checked(topic: string): Promise<void> {
    return this.checks.get(topic, async () => {
      await this.connect();
      await this.ensureTopic(topic);
      // A name no topic can have is left to the broker, which refuses it for good (INVALID_TOPIC_EXCEPTION).
      if (!isLegalTopic(topic)) return;
      await this.mustExist(topic, '(publishing)');
      await this.countPartitions(topic);
    });
  }

  /**
   * Learns how many partitions `topic` has, for the batches to gather publishes by partition. A count gone
   * stale (partitions added since) only gathers less well: a keyed message is sent keyed, placed by kafkajs.
   */
  private async countPartitions(topic: string): Promise<number> {
    // Another client may have just created it: this broker can list it before it serves its metadata.
    const metadata = await askAgain(() => this.admin!.fetchTopicMetadata({ topics: [topic] }), SESSION_CLOCK);
    const count = metadata.topics[0]?.partitions.length ?? 0;
    if (count > 0) this.partitionCounts.set(topic, count);
    return count;
  }

  /** Why a message pinned to `partition` was not sent: the partition does not exist, or is not known yet. */
  private async unknownPartition(topic: string, partition: number): Promise<never> {
    const count = await partitionsReaching(partition, () => this.countPartitions(topic), SESSION_CLOCK);
    if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
      throw new SluiceError(
        'CONFIG_INVALID',
        `kafka: publish to "${topic}": partition must be an integer from 0 to ${count - 1}, got ${show(partition)}`,
      );
    }
    throw new Error(
      `kafka: publish to "${topic}": partition ${partition} is new and the producer does not know it yet (it reads metadata again within metadataMaxAgeMs); nothing was sent`,
    );
  }

  /**
   * Starts a kafkajs consumer (a client of its own) in `request.group` for `request.topic`, with Sluice's
   * sticky, subscription-aware assigner; resolves once it has its first assignment. The app calls it.
   *
   * @throws {@link sluice!SluiceError | SluiceError} (as a rejection) `TOPIC_MISSING` when the topic does not exist and
   *   `createTopics` is off.
   */
  async consume(request: ConsumeRequest): Promise<Consumer> {
    await this.connect();
    await this.ensureTopic(request.topic);
    await this.mustExist(request.topic, `(group "${request.group}")`);
    const consumer = new KafkaConsumer(
      this.createKafka(),
      this.admin!,
      request,
      this.consumerSettings,
      this.log.child({ group: request.group, topic: request.topic }),
      this.clock,
    );
    this.consumers.add(consumer);
    await consumer.start();
    return consumer;
  }

  /**
   * The transactions of `group` over `topic`'s partitions, for a subscriber marked `exactlyOnce`: a
   * transactional producer per input partition, fenced per partition (docs/publishing.md).
   * The app opens a partition before it reads it and releases it when it goes.
   */
  transactions(group: string, topic: string): InputTransactions {
    return kafkajsTransactions({
      kafka: this.kafka,
      admin: () => this.admin!,
      group,
      topic,
      ready: (t) => this.checked(t),
      log: this.log.child({ group, topic }),
    });
  }

  /**
   * The partition of `partitions` that a message with `key` lands in: kafkajs's default partitioner, murmur2
   * over the key's UTF-8 bytes as Java clients hash it.
   */
  partitionOf(key: string, partitions: number): number {
    return keyPartition(key, partitions);
  }

  /** How many partitions `topic` has, as the broker tells (connecting first if need be); 0 when it has none such. */
  async partitionCount(topic: string): Promise<number> {
    await this.connect();
    if (!(await this.admin!.listTopics()).includes(topic)) return 0;
    const { topics } = await this.admin!.fetchTopicMetadata({ topics: [topic] });
    return topics[0]?.partitions.length ?? 0;
  }

  /** The cluster's ID, as the broker tells (connecting first if need be). */
  async clusterId(): Promise<string> {
    await this.connect();
    return (await this.admin!.describeCluster()).clusterId;
  }

  /** See {@link Broker.readTopic}: fetched from the partition's leader, with no consumer group. */
  async readTopic(
    topic: string,
    partition: number,
    from: number,
    visit: (message: InboundMessage) => boolean,
  ): Promise<void> {
    if ((await this.partitionCount(topic)) <= partition) return;
    const read = { kafka: this.kafka, admin: this.admin!, topic, partition, from, log: this.log };
    await readPartition({ ...read, groupPrefix: `${topic}.read-${partition}`, until: 'end' }, (m) =>
      visit(new KafkaInbound(topic, partition, m)),
    );
  }

  /**
   * Creates a topic with `partitions` partitions and `replicationFactor` replicas (connecting first if need be); an
   * existing topic is left as it is.
   */
  async createTopic(name: string, partitions: number, replicationFactor = 1): Promise<void> {
    await this.connect();
    const topics = [{ topic: name, numPartitions: partitions, replicationFactor }];
    await askAgain(() => this.admin!.createTopics({ waitForLeaders: true, topics }), SESSION_CLOCK);
    this.known.add(name);
  }

  /**
   * Closes every consumer it started (each commits and leaves its group), then disconnects the producer and the admin
   * client.
   */
  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.close()));
    this.consumers.clear();
    this.checks.clear(); // a publish after close connects again
    if (this.connecting) {
      await this.connecting.catch(() => {});
      await Promise.all([this.producer?.disconnect(), this.admin?.disconnect()]);
      this.connecting = undefined;
    }
  }

  /**
   * Refuses a topic the broker does not have, naming it and what to do: kafkajs would retry for seconds and
   * then refuse with "This server does not host this topic-partition", naming none. Asked once per topic.
   */
  private async mustExist(topic: string, what: string): Promise<void> {
    if (this.known.has(topic)) return;
    if (!(await this.listed(topic)))
      throw new SluiceError(
        'TOPIC_MISSING',
        `KafkaBroker: topic "${topic}" ${what} does not exist; create it first (broker.createTopic(name, partitions), or KafkaBroker's createTopics option: { partitions: n })`,
      );
    this.known.add(topic);
  }

  /**
   * Whether the broker lists `topic`, asked again for about 1.5 s while it does not: a broker serves a topic
   * just created (by another client, another instance) a moment after the creation returned.
   */
  private async listed(topic: string): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      if ((await this.admin!.listTopics()).includes(topic)) return true;
      if (attempt === 5) return false;
      await pauseAfter(attempt, SESSION_CLOCK);
    }
  }

  private async ensureTopic(topic: string): Promise<void> {
    const create = this.options.createTopics;
    if (!create || this.known.has(topic)) return;
    await this.createTopic(topic, create.partitions, create.replicationFactor);
  }
}
